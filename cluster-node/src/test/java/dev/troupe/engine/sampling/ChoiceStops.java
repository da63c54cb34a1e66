package dev.troupe.engine.sampling;

import dev.troupe.engine.Tokenizer;
import dev.troupe.protocol.cluster.SamplingParams;

/**
 * One choice's stops as the engine chains them: the core's {@link StopTokens} decide from the token
 * id, then the output processor's {@link StopChecker} detokenizes and applies stop strings.
 */
final class ChoiceStops {
  private final StopTokens tokens;
  private final StopChecker text;

  ChoiceStops(SamplingParams p, EosTokens eos, Tokenizer.IncrementalDetokenizer detokenizer) {
    this.tokens = new StopTokens(p, eos);
    this.text = new StopChecker(p, detokenizer);
  }

  StopChecker.Update append(int token) {
    return text.append(token, tokens.check(token));
  }

  StopChecker.Update abort() {
    return text.abort();
  }

  String text() {
    return text.text();
  }

  boolean finished() {
    return text.finished();
  }

  StopChecker.Finish finish() {
    return text.finish();
  }
}
