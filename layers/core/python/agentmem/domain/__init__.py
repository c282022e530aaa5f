"""Pure domain: models, rules, screening and ranking. No I/O."""
