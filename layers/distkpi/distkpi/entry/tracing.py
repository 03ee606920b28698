"""The Powertools Tracer, for the handlers that can afford the X-Ray SDK's import time."""

from aws_lambda_powertools import Tracer

from distkpi.entry.observability import SERVICE

tracer = Tracer(service=SERVICE)
