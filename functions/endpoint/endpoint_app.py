"""Endpoint function: the ASGI app served by uvicorn behind the Lambda Web Adapter."""
