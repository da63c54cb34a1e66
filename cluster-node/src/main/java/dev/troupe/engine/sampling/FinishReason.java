package dev.troupe.engine.sampling;

/** Why a choice ended; {@link #wire()} is the OpenAI {@code finish_reason} string. */
public enum FinishReason {
  /** EOS, a stop token or a stop string. */
  STOP,
  /** {@code max_tokens} (or the context) reached. */
  LENGTH,
  /** Cancelled by the client or the server. */
  ABORT,
  /** Ended with tool calls ({@code tool_choice} auto that called, or required). */
  TOOL_CALLS;

  public String wire() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
