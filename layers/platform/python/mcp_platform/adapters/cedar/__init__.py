"""Cedar policies (``cedarpy``): the policy engine, and the Cedar schema of a catalog."""
