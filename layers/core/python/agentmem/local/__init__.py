"""Run the API on one machine: a real HTTP server in front of the real Lambda handler."""
