"""Report links that last: the webhook's /reports route checks a link's signature and
expiry, then redirects to a presigned URL of minutes; the report itself stays private."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlparse

import boto3

from distkpi.domain.github.report_links import report_link
from distkpi_cli.local.aws_stack import REPORT_LINK_SECRET_ID
from distkpi_cli.local.handlers import LambdaContext
from tests.integration.conftest import BUCKET, Stack

RUN = "resnet50-9f4e1c2b7a-0c699424"


def get(stack: Stack, link: str) -> dict[str, Any]:
    """GET a link on the webhook's Function URL, as Lambda gives it to the handler."""
    url = urlparse(link)
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    request = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": url.path,
        "rawQueryString": url.query,
        "queryStringParameters": query or None,
        "headers": {"host": url.netloc},
        "requestContext": {
            "http": {
                "method": "GET",
                "path": url.path,
                "protocol": "HTTP/1.1",
                "sourceIp": "198.51.100.7",
                "userAgent": "Mozilla/5.0",
            },
            "requestId": "id",
            "routeKey": "$default",
            "stage": "$default",
            "domainName": url.netloc,
        },
        "isBase64Encoded": False,
    }
    return stack.handlers["webhook"].lambda_handler(request, LambdaContext())  # type: ignore[no-any-return]


def key() -> bytes:
    secret = boto3.client("secretsmanager").get_secret_value(SecretId=REPORT_LINK_SECRET_ID)
    return secret["SecretString"].encode()


def test_a_signed_link_redirects_to_a_fresh_presigned_url_of_the_report(stack: Stack) -> None:
    stack.s3.put_object(Bucket=BUCKET, Key=f"reports/{RUN}/index.html", Body=b"<html>ok</html>")
    base = "https://abc.lambda-url.us-east-1.on.aws"
    answer = get(stack, report_link(base, key(), RUN, time.time()))
    assert answer["statusCode"] == 302
    location = answer["headers"]["Location"]
    assert urlparse(location).path == f"/reports/{RUN}/index.html"
    expires = int(parse_qs(urlparse(location).query)["Expires"][0])
    assert 0 < expires - time.time() <= 300  # minutes: the signed link is what lasts


def test_forged_expired_and_unsigned_links_are_refused(stack: Stack) -> None:
    base = "https://abc.lambda-url.us-east-1.on.aws"
    now = time.time()
    good = report_link(base, key(), RUN, now)
    forged = report_link(base, b"another key", RUN, now)
    other_run = good.replace(RUN, "resnet50-0000000000-00000000")
    expired = report_link(base, key(), RUN, now - 400 * 24 * 3600)
    for link, why in (
        (forged, "does not match"),
        (other_run, "does not match"),
        (expired, "has expired"),
        (f"{base}/reports/{RUN}", "not signed"),
    ):
        answer = get(stack, link)
        assert answer["statusCode"] == 403 and why in answer["body"], (link, answer)
