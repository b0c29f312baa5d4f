"""What core's modules share and a user never names: carriers, callbacks, JSON, hints."""
