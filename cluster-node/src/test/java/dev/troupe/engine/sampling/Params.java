package dev.troupe.engine.sampling;

import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.SamplingParams.LogitsProcessorSpec;
import java.util.List;
import java.util.Map;

/** Mutable test builder for {@link SamplingParams}; starts from OpenAI defaults. */
final class Params {
  int n = 1;
  double temperature = 1.0;
  double topP = 1.0;
  int topK = 0;
  double minP = 0;
  double presence = 0;
  double frequency = 0;
  double repetition = 1.0;
  Long seed;
  int maxTokens = 16;
  int minTokens = 0;
  List<String> stop = List.of();
  List<Integer> stopTokenIds = List.of();
  boolean includeStop;
  boolean ignoreEos;
  Integer logprobs;
  Map<Integer, Double> logitBias = Map.of();
  List<Integer> allowed;
  List<String> badWords = List.of();
  boolean beam;
  double lengthPenalty = 1.0;
  List<LogitsProcessorSpec> processors = List.of();
  Map<String, Object> xargs = Map.of();

  SamplingParams build() {
    return SamplingParams.builder()
        .n(n)
        .temperature(temperature)
        .topP(topP)
        .topK(topK)
        .minP(minP)
        .presencePenalty(presence)
        .frequencyPenalty(frequency)
        .repetitionPenalty(repetition)
        .seed(seed)
        .maxTokens(maxTokens)
        .minTokens(minTokens)
        .stop(stop)
        .stopTokenIds(stopTokenIds)
        .includeStopStrInOutput(includeStop)
        .ignoreEos(ignoreEos)
        .logprobs(logprobs)
        .logitBias(logitBias)
        .allowedTokenIds(allowed)
        .badWords(badWords)
        .useBeamSearch(beam)
        .lengthPenalty(lengthPenalty)
        .logitsProcessors(processors)
        .engineXargs(xargs)
        .build();
  }
}
