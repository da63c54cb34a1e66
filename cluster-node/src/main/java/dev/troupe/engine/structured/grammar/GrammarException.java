package dev.troupe.engine.structured.grammar;

/**
 * A grammar that cannot be compiled: a syntax error in a front end's input, an undefined or
 * left-recursive rule, an empty language, or an automaton beyond the configured bounds. The message
 * is meant for the client (the engine wraps it into vLLM's 400 text).
 */
public class GrammarException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public GrammarException(String message) {
    super(message);
  }

  public GrammarException(String message, Throwable cause) {
    super(message, cause);
  }

  /** The automaton would exceed a size bound ({@link Limits}). */
  public static final class TooLarge extends GrammarException {
    private static final long serialVersionUID = 1L;

    public TooLarge(String message) {
      super(message);
    }
  }
}
