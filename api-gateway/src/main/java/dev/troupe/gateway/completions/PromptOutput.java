package dev.troupe.gateway.completions;

import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One prompt's generation, accumulated from its worker's updates (the non-streaming answer folds
 * one per prompt, each on its own stream). Not thread-safe: fed in order by one stream.
 */
final class PromptOutput {
  Started started;
  Usage usage;

  /** Where a remote-decode request's prompt blocks wait (its last update's), or null. */
  dev.troupe.protocol.cluster.KvHandle kvHandle;

  final Map<Integer, Choice> choices = new TreeMap<>();

  /** One choice's output so far. */
  static final class Choice {
    final StringBuilder text = new StringBuilder();
    final List<Integer> tokenIds = new ArrayList<>();
    final List<LogprobEntry> logprobs = new ArrayList<>();
    String finishReason;
    Object stopReason;
  }

  PromptOutput(int n) {
    for (int i = 0; i < n; i++) choices.put(i, new Choice());
  }

  /** Accumulates one event; a {@link Failed} becomes the API error. */
  PromptOutput add(GenerationEvent event) {
    if (event instanceof Failed f) throw GenerationStream.toApiException(f);
    GenerationUpdate u = (GenerationUpdate) event;
    if (u.started() != null) started = u.started();
    for (ChoiceUpdate c : u.choices()) {
      Choice st = choices.computeIfAbsent(c.index(), i -> new Choice());
      st.text.append(c.text());
      st.tokenIds.addAll(c.tokenIds());
      if (c.logprobs() != null) st.logprobs.addAll(c.logprobs());
      if (c.finished()) {
        st.finishReason = c.finishReason().wireName();
        st.stopReason = c.stopReason();
      }
    }
    if (u.done()) {
      usage = u.usage();
      kvHandle = u.kvHandle();
    }
    return this;
  }

  /** Whether the generation reached its last update. */
  boolean complete() {
    return usage != null;
  }
}
