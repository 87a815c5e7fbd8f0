"""ga-opt inside other training frameworks: `ga_opt.integrations.transformers`
(the Hugging Face Trainer)."""
