"""The whole platform on one machine: `python -m local` (``make dev``).

An embedded moto server with the resources of the synthesized CDK template, the endpoint on
uvicorn with the code the Lambda runs, and local event source mappings that drive the ingest
and audit handlers with real-shaped events and AWS's failure semantics.
"""
