"""The two ways a patch is refused, shaped like the kube-apiserver's answers.

A body that cannot be read as the patch type it claims is a 400 ``BadRequest``; a well-formed patch
that cannot be applied to the object (a JSON patch ``test`` that fails, a path that does not exist,
a strategic list of lists) is a 422 ``Invalid`` with apimachinery's generic wording, to which the
detail is appended because upstream's bare sentence leaves users guessing.
"""

from __future__ import annotations

from apimachinery.errors import StatusError, bad_request

# apimachinery's NewGenericServerResponse wording for 422; kubectl shows it after "The request is invalid".
REJECTED = "the server rejected our request due to an error in our request"


def malformed(detail: str) -> StatusError:
    return bad_request(detail)


def rejected(detail: str) -> StatusError:
    return StatusError(422, "Invalid", f"{REJECTED}: {detail}")
