package dev.troupe.engine.sampling;

/**
 * Why a choice ended, the engine's word for it. The worker maps it onto the wire's {@code
 * ModelWorkerProtocol.FinishReason} (one converter: {@code WireUpdates}), which names it for
 * clients.
 */
public enum FinishReason {
  /** EOS, a stop token or a stop string. */
  STOP,
  /** {@code max_tokens} (or the context) reached. */
  LENGTH,
  /** Cancelled by the client or the server. */
  ABORT,
  /** Ended with tool calls ({@code tool_choice} auto that called, or required). */
  TOOL_CALLS
}
