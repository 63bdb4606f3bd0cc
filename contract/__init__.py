"""The contract between the mock and the real Messages API: the probes (probes.py); scripts/contract.py runs them."""
