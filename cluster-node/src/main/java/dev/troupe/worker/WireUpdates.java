package dev.troupe.worker;

import dev.troupe.engine.core.LatencyStats;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.output.RequestUpdate;
import dev.troupe.engine.output.RequestUpdate.LogprobsText;
import dev.troupe.engine.output.RequestUpdate.TokenText;
import dev.troupe.engine.serving.Engine;
import dev.troupe.engine.toolcall.ToolCallDelta;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.FinishReason;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Rejected;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TextSplit;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenLogprob;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ToolCallPiece;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.protocol.cluster.WorkerStatus.Histogram;
import dev.troupe.protocol.cluster.WorkerStatus.Latencies;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The engine's plain outputs as {@code ModelWorkerProtocol} messages: the one place where engine
 * records become wire records (the engine packages never see the protocol's messages).
 */
final class WireUpdates {
  private WireUpdates() {}

  /** A request's update of one step, as its requester receives it. */
  static GenerationUpdate update(RequestUpdate u, String entityId, ActorRef<Command> worker) {
    Started started = null;
    if (u.started() != null) {
      RequestUpdate.Started s = u.started();
      started =
          new Started(
              entityId,
              worker,
              s.weightVersion(),
              s.promptTokens(),
              s.promptTokenIds() == null ? null : boxed(s.promptTokenIds()),
              s.promptLogprobs() == null ? null : entries(s.promptLogprobs()));
    }
    List<ChoiceUpdate> choices = new ArrayList<>(u.choices().size());
    for (RequestUpdate.ChoiceUpdate c : u.choices())
      choices.add(
          new ChoiceUpdate(
              c.index(),
              c.text(),
              boxed(c.tokenIds()),
              c.logprobs() == null ? null : entries(c.logprobs()),
              c.finishReason() == null ? null : FinishReason.valueOf(c.finishReason().name()),
              c.stopReason(),
              c.reasoning(),
              c.toolCalls().isEmpty() ? List.of() : pieces(c.toolCalls()),
              TextSplit.valueOf(c.split().name())));
    Usage usage =
        u.usage() == null
            ? null
            : new Usage(
                u.usage().promptTokens(),
                u.usage().completionTokens(),
                u.usage().cachedPromptTokens());
    return new GenerationUpdate(u.requestId(), started, choices, usage);
  }

  /** The replica's load and model facts. */
  static WorkerStatus status(String entityId, Engine engine) {
    var core = engine.core();
    var scheduler = core.scheduler();
    return new WorkerStatus(
        entityId,
        engine.modelName(),
        core.maxModelLen(),
        core.policy().configName(),
        scheduler.numWaiting(),
        scheduler.numRunning(),
        scheduler.numPreemptions(),
        scheduler.blocks().numUsed(),
        scheduler.blocks().numBlocks(),
        0,
        core.promptTokens(),
        core.generatedTokens(),
        scheduler.prefixCache().queries(),
        scheduler.prefixCache().hits(),
        latencies(core.latencies()));
  }

  private static Latencies latencies(LatencyStats l) {
    return new Latencies(
        histogram(l.queue()),
        histogram(l.prefill()),
        histogram(l.decode()),
        histogram(l.inference()),
        histogram(l.interToken()),
        new WorkerStatus.Tokens(
            histogram(l.promptTokens()),
            histogram(l.generationTokens()),
            histogram(l.maxGenerationTokens()),
            histogram(l.paramsN()),
            histogram(l.paramsMaxTokens()),
            histogram(l.timePerOutputToken()),
            histogram(l.iterationTokens())));
  }

  /** Where the replica runs and what it holds. */
  static WorkerStatus.Details details(
      String node,
      dev.troupe.engine.DeviceInfo d,
      List<String> adapters,
      TokenRates rates,
      long nowNanos,
      boolean draining,
      dev.troupe.protocol.cluster.KvRole kvRole,
      WorkerStatus.KvTransferStats kvTransfer) {
    List<WorkerStatus.LoadedAdapter> loaded = new ArrayList<>();
    for (String name : adapters) loaded.add(new WorkerStatus.LoadedAdapter(name, stepOf(name)));
    return new WorkerStatus.Details(
        node,
        new WorkerStatus.Device(d.kind(), d.index(), d.name(), d.memoryBytes()),
        loaded,
        rates.promptPerSecond(nowNanos),
        rates.generatedPerSecond(nowNanos),
        draining,
        kvRole,
        kvTransfer);
  }

  private static Histogram histogram(LatencyStats.Snapshot s) {
    return new Histogram(s.bounds(), s.counts(), s.sum());
  }

  /**
   * The step of an adapter named {@code <model id>:step<N>} ({@code Adapter.name()}); -1 if not.
   */
  static long stepOf(String adapterName) {
    int at = adapterName.lastIndexOf(":step");
    try {
      return at < 0 ? -1 : Long.parseLong(adapterName.substring(at + ":step".length()));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** What a failed preparation (off the worker thread) means for its request. */
  static Rejection rejection(Throwable error) {
    Throwable e = unwrap(error);
    return e instanceof Rejection r
        ? r
        : Rejection.internal("The worker failed to prepare this request: " + e);
  }

  static Throwable unwrap(Throwable e) {
    return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
  }

  /** A replica whose input queue is full. */
  static Rejection overloaded(String entityId, int queued) {
    return new Rejection(
        Rejection.Kind.OVERLOADED,
        "The server is overloaded: model replica "
            + entityId
            + " has "
            + queued
            + " requests waiting to be prepared. Retry later.",
        null);
  }

  static Failed failed(String requestId, Rejection r) {
    return new Failed(requestId, kind(r.kind()), String.valueOf(r.getMessage()), r.param());
  }

  static Rejected rejected(Rejection r) {
    return new Rejected(kind(r.kind()), String.valueOf(r.getMessage()), r.param());
  }

  private static ErrorKind kind(Rejection.Kind kind) {
    return switch (kind) {
      case BAD_REQUEST -> ErrorKind.BAD_REQUEST;
      case OVERLOADED -> ErrorKind.OVERLOADED;
      case INTERNAL -> ErrorKind.INTERNAL;
    };
  }

  private static List<LogprobEntry> entries(List<LogprobsText> in) {
    List<LogprobEntry> out = new ArrayList<>(in.size());
    for (LogprobsText e : in) {
      if (e == null) {
        out.add(null); // a prompt's first position
        continue;
      }
      List<TokenLogprob> top = new ArrayList<>(e.top().size());
      for (TokenText t : e.top()) top.add(token(t));
      out.add(new LogprobEntry(token(e.chosen()), top));
    }
    return out;
  }

  private static TokenLogprob token(TokenText t) {
    return new TokenLogprob(t.tokenId(), t.token(), t.logprob(), t.rank());
  }

  private static List<ToolCallPiece> pieces(List<ToolCallDelta> deltas) {
    List<ToolCallPiece> out = new ArrayList<>(deltas.size());
    for (ToolCallDelta d : deltas)
      out.add(new ToolCallPiece(d.index(), d.id(), d.name(), d.arguments()));
    return out;
  }

  static List<Integer> boxed(int[] ids) {
    List<Integer> out = new ArrayList<>(ids.length);
    for (int id : ids) out.add(id);
    return out;
  }
}
