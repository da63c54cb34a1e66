package dev.troupe.engine.sampling;

import dev.troupe.engine.spi.LogitsProcessor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a request's samplers need beyond its {@code SamplingParams} that is costly or runs request
 * code: {@code bad_words} tokenized, custom logits processors constructed (one list per choice),
 * and a token constraint per choice when the request has one. Made by {@link
 * SamplerFactory#prepare} in the input processor, off the engine thread; handed to the engine with
 * the request and consumed by {@link
 * SamplerFactory#create(dev.troupe.protocol.cluster.SamplingParams, SamplingSetup, int[], int)}
 * there.
 */
public final class SamplingSetup {
  final BadWords badWords;
  private final List<List<LogitsProcessor>> processors;
  private final List<TokenConstraint> constraints;

  SamplingSetup(
      BadWords badWords,
      List<List<LogitsProcessor>> processors,
      List<TokenConstraint> constraints) {
    this.badWords = badWords;
    this.processors = List.copyOf(processors);
    this.constraints = Collections.unmodifiableList(new ArrayList<>(constraints));
  }

  /** Choices this setup was made for. */
  public int choices() {
    return processors.size();
  }

  List<LogitsProcessor> processors(int choice) {
    return processors.get(choice);
  }

  /** Choice {@code choice}'s constraint, or null. */
  TokenConstraint constraint(int choice) {
    return constraints.isEmpty() ? null : constraints.get(choice);
  }

  /**
   * This setup with one token constraint per choice (null entries: unconstrained), for structured
   * outputs.
   */
  public SamplingSetup withConstraints(List<TokenConstraint> perChoice) {
    if (perChoice.size() != processors.size())
      throw new IllegalArgumentException(
          "one constraint per choice: " + processors.size() + ", got " + perChoice.size());
    return new SamplingSetup(badWords, processors, perChoice);
  }
}
