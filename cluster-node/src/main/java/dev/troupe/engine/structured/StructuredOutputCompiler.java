package dev.troupe.engine.structured;

import dev.troupe.engine.sampling.InvalidSamplingParamsException;
import dev.troupe.engine.structured.grammar.CompiledGrammar;
import dev.troupe.engine.structured.grammar.Grammar;
import dev.troupe.engine.structured.grammar.GrammarException;
import dev.troupe.engine.structured.grammar.Limits;
import dev.troupe.engine.structured.grammar.TokenVocabulary;
import dev.troupe.engine.structured.syntax.JsonSchemaConverter;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * Turns a request's {@link StructuredOutputsParams} into a {@link CompiledGrammar} for one model's
 * vocabulary, through a shared {@link GrammarCache}. {@link #validate} is cheap (front end only)
 * and gives the 400s of malformed constraints; {@link #compile} also builds the token tables and
 * can take from milliseconds to seconds, so call it on a compile executor, never on the engine
 * thread. Thread-safe.
 */
public final class StructuredOutputCompiler {

  private final Supplier<TokenVocabulary> vocabularySource;
  private volatile TokenVocabulary vocabulary;
  private final Limits limits;
  private final GrammarCache cache;
  private final Executor helpers;
  private final int parallelism;
  private final int maxJsonWhitespace;

  public StructuredOutputCompiler(TokenVocabulary vocabulary, Limits limits, GrammarCache cache) {
    this(vocabulary, limits, cache, null, 1);
  }

  /**
   * @param helpers where a compile may run extra workers for its token tables (null: none)
   * @param parallelism threads per compile, the calling one included
   */
  public StructuredOutputCompiler(
      TokenVocabulary vocabulary,
      Limits limits,
      GrammarCache cache,
      Executor helpers,
      int parallelism) {
    this(() -> vocabulary, limits, cache, helpers, parallelism);
  }

  /**
   * With the vocabulary built on first use (building it costs about half a second for a 150k-token
   * vocabulary: models that never see a constraint never pay it).
   */
  public StructuredOutputCompiler(
      Supplier<TokenVocabulary> vocabulary,
      Limits limits,
      GrammarCache cache,
      Executor helpers,
      int parallelism) {
    this(
        vocabulary,
        limits,
        cache,
        helpers,
        parallelism,
        JsonSchemaConverter.Options.DEFAULT_MAX_WHITESPACE);
  }

  /**
   * @param maxJsonWhitespace the bound on whitespace in a row in JSON constraints that set no
   *     whitespace option ({@link StructuredOutputSettings#maxJsonWhitespace})
   */
  public StructuredOutputCompiler(
      Supplier<TokenVocabulary> vocabulary,
      Limits limits,
      GrammarCache cache,
      Executor helpers,
      int parallelism,
      int maxJsonWhitespace) {
    this.maxJsonWhitespace = maxJsonWhitespace;
    this.vocabularySource = vocabulary;
    this.limits = limits;
    this.cache = cache;
    this.helpers = helpers;
    this.parallelism = Math.max(1, parallelism);
  }

  public TokenVocabulary vocabulary() {
    TokenVocabulary v = vocabulary;
    if (v == null) {
      synchronized (this) {
        v = vocabulary;
        if (v == null) vocabulary = v = vocabularySource.get();
      }
    }
    return v;
  }

  /**
   * Parses the constraint and checks it (no token tables).
   *
   * @throws InvalidSamplingParamsException with vLLM's message and the request field
   */
  public Grammar validate(StructuredOutputsParams params) {
    return StructuredOutputGrammars.of(params, maxJsonWhitespace);
  }

  /**
   * The compiled grammar, from the cache or compiled now.
   *
   * @throws InvalidSamplingParamsException when the constraint is invalid or its automaton exceeds
   *     the bounds
   */
  public CompiledGrammar compile(StructuredOutputsParams params) {
    TokenVocabulary v = vocabulary();
    return cache.get(
        // the bound is part of the grammar: one cache may serve compilers with different ones
        new Key(v, java.util.List.of(params.cacheKey(), maxJsonWhitespace)),
        () -> {
          Grammar g = StructuredOutputGrammars.of(params, maxJsonWhitespace);
          try {
            return CompiledGrammar.compile(g, v, limits, helpers, parallelism);
          } catch (GrammarException e) {
            throw StructuredOutputGrammars.tooLarge(params, e);
          }
        });
  }

  /** Vocabularies compare by identity: one per loaded tokenizer. */
  private record Key(TokenVocabulary vocabulary, Object spec) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && k.vocabulary == vocabulary && k.spec.equals(spec);
    }

    @Override
    public int hashCode() {
      return System.identityHashCode(vocabulary) * 31 + spec.hashCode();
    }
  }
}
