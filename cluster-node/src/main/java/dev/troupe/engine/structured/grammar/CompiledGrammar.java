package dev.troupe.engine.structured.grammar;

/**
 * A grammar ready for decoding with one vocabulary: the pushdown {@link Automaton} plus its
 * precomputed {@link TokenMaskTable}. Immutable and thread-safe; share it between requests (the
 * compile cache does) and give each request its own {@link GrammarMatcher}s.
 */
public final class CompiledGrammar {

  private final Automaton automaton;
  private final TokenVocabulary vocabulary;
  private final TokenMaskTable masks;

  private CompiledGrammar(Automaton automaton, TokenVocabulary vocabulary, TokenMaskTable masks) {
    this.automaton = automaton;
    this.vocabulary = vocabulary;
    this.masks = masks;
  }

  /**
   * Compiles a grammar for a vocabulary: automaton, then the per-state token tables. Costs from
   * milliseconds to (for large grammars) seconds; run it off the engine thread.
   *
   * @throws GrammarException when the grammar is invalid or exceeds {@code limits}
   */
  public static CompiledGrammar compile(
      Grammar grammar, TokenVocabulary vocabulary, Limits limits) {
    return compile(grammar, vocabulary, limits, null, 1);
  }

  /**
   * As {@link #compile(Grammar, TokenVocabulary, Limits)}, sharing the token-table walk with up to
   * {@code parallelism - 1} tasks on {@code helpers} (the calling thread always works too, and
   * never waits for a helper that did not start).
   */
  public static CompiledGrammar compile(
      Grammar grammar,
      TokenVocabulary vocabulary,
      Limits limits,
      java.util.concurrent.Executor helpers,
      int parallelism) {
    Automaton a = AutomatonCompiler.compile(grammar, limits);
    TokenMaskTable t =
        TokenMaskTable.build(a, vocabulary, limits.maxMaskBytes(), helpers, parallelism);
    return new CompiledGrammar(a, vocabulary, t);
  }

  /** A matcher at the start of the output, with its own configuration store. */
  public GrammarMatcher newMatcher() {
    return new GrammarMatcher(this, new GrammarMatcher.Shared(new StackSets(automaton)));
  }

  public Automaton automaton() {
    return automaton;
  }

  public TokenVocabulary vocabulary() {
    return vocabulary;
  }

  TokenMaskTable masks() {
    return masks;
  }

  /** Approximate heap footprint in bytes (automaton and token tables), for the cache's bound. */
  public long bytes() {
    return masks.bytes();
  }
}
