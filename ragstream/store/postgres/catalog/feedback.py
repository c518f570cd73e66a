"""The PostgreSQL catalog's answer feedback: ratings and citation opens per answer and asker."""

from __future__ import annotations

from collections.abc import Sequence

from ragstream.store import feedback_sql as sql
from ragstream.store.catalog_feedback import CollectionFeedback, FeedbackDay, FeedbackRow, RatedQuestion
from ragstream.store.catalog_sql import NO_OWNER, postgres
from ragstream.store.postgres.catalog.connection import PostgresRole


class PostgresFeedback(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.Feedback` in PostgreSQL."""

    def record_answer(self, message_id: str, owner: str | None, question: str, answered_at: str) -> None:
        """Keep ``message_id`` as ``owner``'s answer to ``question`` (again: no change)."""
        with self._db.write() as conn:
            conn.execute(postgres(sql.RECORD), (message_id, owner or NO_OWNER, question, answered_at))

    def record_answer_collections(self, message_id: str, collection_ids: Sequence[str]) -> None:
        """Note the collections (ids) the answer ``message_id`` drew on (again: no change)."""
        if not collection_ids:
            return
        with self._db.write() as conn, conn.cursor() as cursor:
            cursor.executemany(postgres(sql.RECORD_COLLECTION), [(message_id, collection_id) for collection_id in collection_ids])

    def rate_answer(self, message_id: str, owner: str | None, rating: str, comment: str, rated_at: str) -> bool:
        """Set ``owner``'s rating of the answer; False when ``owner`` has no answer with that id."""
        with self._db.write() as conn:
            return conn.execute(postgres(sql.RATE), (rating, comment, rated_at, message_id, owner or NO_OWNER)).rowcount > 0

    def record_citation_open(self, message_id: str, owner: str | None, citation: int | None = None) -> bool | None:
        """Count the citation ``citation`` of ``owner``'s answer opened, once: True now, False before (two processes
        opening it at once: one counts it); None when ``owner`` has no answer with that id."""
        with self._db.write() as conn:
            if conn.execute(postgres(sql.ASKED), (message_id, owner or NO_OWNER)).fetchone() is None:
                return None
            if conn.execute(postgres(sql.OPEN), (message_id, sql.UNNAMED_CITATION if citation is None else citation)
                            ).rowcount == 0:
                return False
            conn.execute(postgres(sql.COUNT_OPEN), (message_id,))
            return True

    def feedback_days(self, since: str) -> list[FeedbackDay]:
        """Per day from ``since`` on, oldest first: answers, ratings and citation opens."""
        with self._db.read() as conn:
            return [sql.day(row) for row in conn.execute(postgres(sql.DAYS), (since,)).fetchall()]

    def feedback_by_collection(self, since: str) -> list[CollectionFeedback]:
        """Per collection, the answers from ``since`` on that drew on it: ratings and citation opens."""
        with self._db.read() as conn:
            return [sql.by_collection(row) for row in conn.execute(postgres(sql.BY_COLLECTION), (since,)).fetchall()]

    def worst_questions(self, since: str, limit: int) -> list[RatedQuestion]:
        """At most ``limit`` questions rated not helpful since ``since``, most not-helpful first."""
        with self._db.read() as conn:
            rows = conn.execute(postgres(sql.WORST), (since, max(limit, 0))).fetchall()
        return [sql.rated_question(row) for row in rows]

    def feedback_rows(self, after: str | None, limit: int) -> list[FeedbackRow]:
        """Up to ``limit`` answers' rows in message-id order (byte order, as SQLite sorts), after ``after``."""
        with self._db.read() as conn:
            rows = conn.execute(postgres(sql.ROWS.format(collate='COLLATE "C"')), (after or "", limit)).fetchall()
            ids = [row[0] for row in rows]
            marks = ", ".join("?" * len(ids))
            memberships = conn.execute(postgres(sql.ROW_COLLECTIONS.format(marks=marks)), ids).fetchall() if ids else []
            opens = conn.execute(postgres(sql.ROW_OPENS.format(marks=marks)), ids).fetchall() if ids else []
        return sql.feedback_rows(rows, memberships, opens)

    def import_feedback(self, rows: Sequence[FeedbackRow]) -> None:
        """Store answers' rows exactly as given (an existing message id is replaced, its collections too)."""
        if not rows:
            return
        params = sql.import_params(rows)
        with self._db.write() as conn, conn.cursor() as cursor:
            cursor.executemany(postgres(sql.IMPORT), params.answers)
            cursor.executemany(postgres(sql.FORGET_COLLECTIONS), params.forget)
            cursor.executemany(postgres(sql.FORGET_OPENS), params.forget)
            if params.collections:
                cursor.executemany(postgres(sql.RECORD_COLLECTION), params.collections)
            if params.opens:
                cursor.executemany(postgres(sql.OPEN), params.opens)
