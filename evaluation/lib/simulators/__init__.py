"""User simulators (PEPPER target-free, iEvaLM-style target-based, a no-LLM template), the
simulated users they play and the conversation loop with a live system. Pure: no Django."""
