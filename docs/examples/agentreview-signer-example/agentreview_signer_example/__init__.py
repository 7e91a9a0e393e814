"""An example agentreview signer: ``openssl-ed25519`` signatures made and checked with the openssl CLI."""
