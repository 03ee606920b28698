"""The documentation's reference pages, written from the code they describe (the suite
model, the JSON Schemas, the argparse parser, the KPI catalogue, the log readers and
template.yaml), so that they cannot drift from it: `python -m distkpi_cli.reference`."""
