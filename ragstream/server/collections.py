"""``/api/collections``: list what the caller may read, create, read, change and delete a collection, and move
documents in and out of one (docs/collections.md, docs/http-api.md). An unknown collection and one the caller may
not read are the same 404 ``collection_not_found``; a reader who tries to change one gets 403 ``forbidden``."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import APIRouter, Depends

from ragstream.models import CollectionRecord
from ragstream.server.schemas import CollectionDeleteResponse, CollectionRequest, ErrorResponse, MembershipResponse
from ragstream.server.state import ServerState, get_state
from ragstream.server.users import Caller, get_caller

router = APIRouter(prefix="/api/collections", tags=["collections"])
ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorResponse} for status in (403, 404, 409, 422)}


@router.get("", response_model=list[CollectionRecord], summary="The collections the caller may read")
def list_collections(state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> list[CollectionRecord]:
    """By name, each with the count of its documents the caller may see."""
    return state.rs.collections(user=caller.user, admin=caller.admin)


@router.post("", status_code=HTTPStatus.CREATED, response_model=CollectionRecord, responses=ERRORS,
             summary="Create a collection")
def create_collection(body: CollectionRequest, state: ServerState = Depends(get_state),
                      caller: Caller = Depends(get_caller)) -> CollectionRecord:
    """A new collection owned by the caller (private unless ``access`` says otherwise); 409 for a name taken for the
    caller; 403 for ``access: all`` from a user who is not an admin (unless ``collections.users_may_share_with_all``)."""
    return state.rs.create_collection(body.name or "", description=body.description or "",
                                      instructions=body.instructions or "", access=body.access or "private",
                                      readers=body.readers or [], editors=body.editors or [], user=caller.user,
                                      admin=caller.admin)


@router.get("/{name}", response_model=CollectionRecord, responses=ERRORS, summary="Read a collection")
def get_collection(name: str, state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> CollectionRecord:
    """One collection the caller may read."""
    return state.rs.collection(name, user=caller.user, admin=caller.admin)


@router.patch("/{name}", response_model=CollectionRecord, responses=ERRORS, summary="Change a collection")
def edit_collection(name: str, body: CollectionRequest, state: ServerState = Depends(get_state),
                    caller: Caller = Depends(get_caller)) -> CollectionRecord:
    """Change the fields given; its owner or an admin only (403 for its readers and editors)."""
    return state.rs.edit_collection(name, new_name=body.name, description=body.description,
                                    instructions=body.instructions, access=body.access, readers=body.readers,
                                    editors=body.editors, user=caller.user, admin=caller.admin)


@router.delete("/{name}", response_model=CollectionDeleteResponse, responses=ERRORS, summary="Delete a collection")
def delete_collection(name: str, delete_documents: bool = False, state: ServerState = Depends(get_state),
                      caller: Caller = Depends(get_caller)) -> CollectionDeleteResponse:
    """Its owner or an admin only; 409 ``collection_not_empty`` while it holds documents, unless
    ``delete_documents=true``: then its documents that belong to no other collection are deleted too."""
    deleted = state.rs.delete_collection(name, delete_documents=delete_documents, user=caller.user, admin=caller.admin)
    return CollectionDeleteResponse(deleted=name, documents_deleted=[record.document_id for record in deleted])


@router.put("/{name}/documents/{document_id}", response_model=MembershipResponse, responses=ERRORS,
            summary="Put a document in a collection")
def add_document(name: str, document_id: str, state: ServerState = Depends(get_state),
                 caller: Caller = Depends(get_caller)) -> MembershipResponse:
    """For its editors: the document (one the caller may see, in a collection the caller may edit) joins it
    without re-embedding."""
    added = state.rs.add_to_collection(name, [document_id], user=caller.user, admin=caller.admin)
    return MembershipResponse(collection=name, document_id=document_id, changed=bool(added))


@router.delete("/{name}/documents/{document_id}", response_model=MembershipResponse, responses=ERRORS,
               summary="Take a document out of a collection")
def remove_document(name: str, document_id: str, state: ServerState = Depends(get_state),
                    caller: Caller = Depends(get_caller)) -> MembershipResponse:
    """For its editors: the document leaves it without re-embedding (never its last collection: 422)."""
    removed = state.rs.remove_from_collection(name, [document_id], user=caller.user, admin=caller.admin)
    return MembershipResponse(collection=name, document_id=document_id, changed=bool(removed))
