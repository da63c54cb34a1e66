package dev.troupe.engine.structured;

import dev.troupe.engine.reasoning.ReasoningParser;
import dev.troupe.engine.sampling.InvalidSamplingParamsException;
import dev.troupe.engine.sampling.TokenConstraint;
import dev.troupe.engine.structured.grammar.CompiledGrammar;
import dev.troupe.engine.structured.grammar.GrammarMatcher;
import dev.troupe.protocol.cluster.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Makes a request's per-choice {@link TokenConstraint}s: compiles its structured-output constraint
 * (through the compile cache) and gives each choice a matcher (forks of one, sharing its
 * configuration store) and, with a reasoning parser, its own reasoning session, so the grammar
 * applies after the reasoning. Called by the input processor, off the engine thread.
 */
public final class Constraints {

  private final StructuredOutputCompiler compiler;
  private final ReasoningParser reasoning;
  private final boolean withinBudget;

  /**
   * Constraints that keep outputs completable within {@code max_tokens}.
   *
   * @param compiler the model's compiler
   * @param reasoning the model's reasoning parser, or null
   */
  public Constraints(StructuredOutputCompiler compiler, ReasoningParser reasoning) {
    this(compiler, reasoning, true);
  }

  /**
   * @param withinBudget keep each output completable within its {@code max_tokens} ({@link
   *     StructuredOutputSettings#completeWithinMaxTokens}); false: cut it there, as vLLM does
   */
  public Constraints(
      StructuredOutputCompiler compiler, ReasoningParser reasoning, boolean withinBudget) {
    this.compiler = compiler;
    this.reasoning = reasoning;
    this.withinBudget = withinBudget;
  }

  /**
   * One constraint per choice, or null when the request has none.
   *
   * @throws InvalidSamplingParamsException for an invalid or oversized constraint (400), or one
   *     combined with beam search
   */
  public List<TokenConstraint> forRequest(
      SamplingParams params, int[] promptIds, Map<String, Object> chatTemplateKwargs) {
    if (params.structuredOutputs() == null) return null;
    if (params.useBeamSearch())
      throw new InvalidSamplingParamsException(
          "use_beam_search",
          "Structured outputs and forced tool calls are not supported with beam search.");
    CompiledGrammar grammar = compiler.compile(params.structuredOutputs());
    GrammarMatcher base = grammar.newMatcher();
    List<TokenConstraint> out = new ArrayList<>(params.n());
    for (int i = 0; i < params.n(); i++) {
      ReasoningParser.Session session =
          reasoning == null ? null : reasoning.open(promptIds, chatTemplateKwargs);
      out.add(new GrammarConstraint(base.fork(), session, withinBudget));
    }
    return out;
  }
}
