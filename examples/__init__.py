"""Example feature packages that are not part of the deployed endpoint."""
