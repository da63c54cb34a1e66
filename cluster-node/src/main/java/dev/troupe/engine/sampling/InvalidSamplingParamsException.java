package dev.troupe.engine.sampling;

/**
 * A request's sampling parameters cannot be honoured for this model (out-of-vocabulary ids, a
 * logits processor that is not allowed, ...). The caller answers 400 with {@link #param()} as the
 * OpenAI error's {@code param}.
 */
public final class InvalidSamplingParamsException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  private final String param;

  public InvalidSamplingParamsException(String param, String message) {
    super(message);
    this.param = param;
  }

  public InvalidSamplingParamsException(String param, String message, Throwable cause) {
    super(message, cause);
    this.param = param;
  }

  /** The request field at fault, OpenAI spelling (e.g. {@code logit_bias}). */
  public String param() {
    return param;
  }
}
