"""The package's exceptions: one base class, translated from library errors at the edges."""


class DistkpiError(Exception):
    """Base class of every error distkpi raises on purpose."""


class ContractError(DistkpiError):
    """A run.json, node manifest or suite does not follow its contract."""


class RunFolderError(DistkpiError):
    """A run folder cannot be used at all (missing, not a folder, no run.json)."""


class StorageError(DistkpiError):
    """S3, DynamoDB or a local folder refused or failed an operation."""


class ConflictError(DistkpiError):
    """A conditional write lost: someone else already did this step."""


class NotFoundError(DistkpiError):
    """An item or object that should exist does not."""


class LaunchError(DistkpiError):
    """AWS Batch refused a job."""


class SubmitThrottledError(DistkpiError):
    """Batch kept answering TooManyRequestsException: the work is retried later as a whole
    (not a LaunchError, which fails the config)."""


class GitHubError(DistkpiError):
    """GitHub refused a request or could not be reached after retries."""


class GitHubNotFoundError(GitHubError):
    """GitHub answered 404: what was asked for is not there (a deleted comment, no file)."""


class GitHubRateLimitError(GitHubError):
    """GitHub's limits would make a request wait longer than the invocation has left."""


class GitHubWriteSkipped(GitHubRateLimitError):
    """A write that may be left out (a run's `pending`) was not sent: it would have waited
    for its turn under GitHub's limits, and what comes after it stands without it."""


class GitHubAuthError(GitHubError):
    """GitHub refused the App's JWT, or the installation has no access to the repository."""


class SignatureError(DistkpiError):
    """A webhook's signature is missing or does not match."""


class CalibrationError(DistkpiError):
    """A/A jobs that the fleet's noise cannot be measured from (too few jobs or runs)."""


class ChatError(DistkpiError):
    """The chat (Slack's incoming webhook) refused a message or could not be reached; the
    message never names the webhook's URL, which is a secret."""


class DeliveryInProgressError(DistkpiError):
    """Another invocation holds the delivery's claim: its queue message is given back."""
