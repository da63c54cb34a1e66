package dev.troupe.engine.core;

/**
 * Why the engine refuses or fails one request, with the request field at fault: the worker turns it
 * into its {@code Failed} reply (an HTTP 400, 503 or 500 at the gateway). Thrown by the input
 * processor and returned by {@link EngineCore#add}; it never concerns other requests.
 */
public final class Rejection extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The kinds the gateway maps to HTTP statuses. */
  public enum Kind {
    /** The request's own data is at fault: 400. */
    BAD_REQUEST,
    /** The replica cannot take more work now: 503. */
    OVERLOADED,
    /** The engine failed on this request: 500 (details only in the worker's log). */
    INTERNAL
  }

  private final Kind kind;
  private final String param;

  public Rejection(Kind kind, String message, String param) {
    super(message, null, false, false);
    if (kind == null) throw new IllegalArgumentException("kind is required");
    this.kind = kind;
    this.param = param;
  }

  public static Rejection badRequest(String message, String param) {
    return new Rejection(Kind.BAD_REQUEST, message, param);
  }

  /** The request was cancelled (its client went away) while it was being prepared. */
  public static Rejection cancelled() {
    return new Rejection(Kind.BAD_REQUEST, "The request was cancelled.", null);
  }

  public static Rejection internal(String message) {
    return new Rejection(Kind.INTERNAL, message, null);
  }

  public Kind kind() {
    return kind;
  }

  /** The OpenAI request field at fault (e.g. {@code messages}, {@code max_tokens}), or null. */
  public String param() {
    return param;
  }
}
