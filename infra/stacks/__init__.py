"""The two stacks: stateful (data that must outlive deploys) and stateless (everything that runs)."""
