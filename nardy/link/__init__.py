"""The link between an arbiter's edge and core (generated messages in v1/)."""
