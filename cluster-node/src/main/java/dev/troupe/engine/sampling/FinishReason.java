package dev.troupe.engine.sampling;

/** Why a choice ended; {@link #wire()} is the OpenAI {@code finish_reason} string. */
public enum FinishReason {
  /** EOS, a stop token or a stop string. */
  STOP,
  /** {@code max_tokens} (or the context) reached. */
  LENGTH,
  /** Cancelled by the client or the server. */
  ABORT;

  public String wire() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
