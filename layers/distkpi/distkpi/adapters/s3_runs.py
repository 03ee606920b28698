"""Run folders in S3 (runs/<run_id>/...), read and written as the run-folder contract says."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager, closing
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import ClientError

from distkpi.adapters.aws import client, error_code
from distkpi.domain.layout import EXPIRES_TAG, run_prefix
from distkpi.exceptions import NotFoundError, StorageError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

MISSING = {"NoSuchKey", "404", "NotFound"}
# a conditional write that lost: changed (412), raced (409), or gone since it was read
LOST = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409", *MISSING}


class S3RunStore:
    def __init__(self, bucket: str, s3: S3Client | None = None) -> None:
        self.bucket = bucket
        self._s3 = s3

    @property
    def s3(self) -> S3Client:
        if self._s3 is None:
            self._s3 = cast("S3Client", client("s3"))
        return self._s3

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/json") -> None:
        try:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)
        except ClientError as exc:
            raise StorageError(f"cannot write s3://{self.bucket}/{key}: {exc}") from exc

    def read_tagged(self, key: str) -> tuple[bytes, str] | None:
        try:
            response = self.s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if error_code(exc) in MISSING:
                return None
            raise StorageError(f"cannot read s3://{self.bucket}/{key}: {exc}") from exc
        with closing(response["Body"]) as body:
            return body.read(), response["ETag"]

    def put_if(self, key: str, data: bytes, content_type: str, etag: str | None) -> bool:
        """S3's conditional write: If-Match the ETag read, or If-None-Match * for a new
        object; 412 (or 409, a concurrent conditional write) means another writer won."""
        try:
            if etag is not None:
                self.s3.put_object(
                    Bucket=self.bucket, Key=key, Body=data, ContentType=content_type, IfMatch=etag
                )
            else:
                self.s3.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=data,
                    ContentType=content_type,
                    IfNoneMatch="*",
                )
        except ClientError as exc:
            if error_code(exc) in LOST:
                return False
            raise StorageError(f"cannot write s3://{self.bucket}/{key}: {exc}") from exc
        return True

    def upload_stream(self, stream: Any, key: str, *, expires: bool = False) -> None:
        """What ``stream`` reads, of any size, each byte read once and in order (it need only
        have ``read``: one that cannot seek is read sequentially, never twice). ``expires``:
        tagged for the bucket's lifecycle rule, which deletes it after the stack's
        LogRetentionDays (layout.EXPIRES_TAG)."""
        extra = {"Tagging": EXPIRES_TAG} if expires else None
        try:
            self.s3.upload_fileobj(stream, self.bucket, key, ExtraArgs=extra)
        except (ClientError, S3UploadFailedError) as exc:
            raise StorageError(f"cannot write s3://{self.bucket}/{key}: {exc}") from exc

    def put_json(self, key: str, data: Any) -> None:
        self.put_bytes(key, json.dumps(data, indent=2).encode())

    def read_bytes(self, key: str) -> bytes:
        with self.open(key) as body:
            return body.read()

    def open(self, key: str) -> AbstractContextManager[BinaryIO]:
        try:
            response = self.s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if error_code(exc) in MISSING:
                raise NotFoundError(f"s3://{self.bucket}/{key}") from exc
            raise StorageError(f"cannot read s3://{self.bucket}/{key}: {exc}") from exc
        return cast("AbstractContextManager[BinaryIO]", closing(response["Body"]))

    def list_names(self, prefix: str) -> list[str]:
        """Names of the objects directly under ``prefix`` (which ends with '/')."""
        names: list[str] = []
        try:
            pages = self.s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix, Delimiter="/"
            )
            for page in pages:
                names.extend(obj["Key"][len(prefix) :] for obj in page.get("Contents", []))
        except ClientError as exc:
            raise StorageError(f"cannot list s3://{self.bucket}/{prefix}: {exc}") from exc
        return sorted(names)

    def presigned_url(self, key: str, expires_s: int = 7 * 24 * 3600) -> str:
        return self.s3.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_s
        )

    def run(self, run_id: str) -> S3RunSource:
        return S3RunSource(self, run_prefix(run_id))


class S3RunSource:
    """One run folder in S3 as a RunSource: paths are relative to runs/<run_id>/."""

    def __init__(self, store: S3RunStore, prefix: str) -> None:
        self.store = store
        self.prefix = prefix

    def read_bytes(self, path: str) -> bytes:
        return self.store.read_bytes(self.prefix + path)

    def open(self, path: str) -> AbstractContextManager[BinaryIO]:
        return self.store.open(self.prefix + path)

    def list_names(self, folder: str) -> list[str]:
        return self.store.list_names(f"{self.prefix}{folder.strip('/')}/")
