package dev.troupe.gateway.routes;

import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Command;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenized;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.FinishReason;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Generate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GetStatus;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Rejected;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenLogprob;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenized;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import dev.troupe.protocol.cluster.WorkerStatus;
import dev.troupe.protocol.cluster.WorkerStatus.Histogram;
import dev.troupe.protocol.cluster.WorkerStatus.Latencies;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * A test double for a ModelWorker entity speaking the real {@code ModelWorkerProtocol}: it answers
 * with a scripted generation chosen by the last message's content, and forwards every command it
 * receives to {@code seen} so tests can check what the gateway asked for.
 *
 * <ul>
 *   <li>a non-zero priority on the {@code fcfs} worker: {@link Failed} BAD_REQUEST naming {@code
 *       priority}, as the real worker's input processor answers
 *   <li>{@code "bad prompt"}: {@link Failed} BAD_REQUEST naming {@code messages}, before any update
 *   <li>{@code "busy"}: {@link Failed} OVERLOADED
 *   <li>{@code "crash midway"}: the first update, then {@link Failed} INTERNAL
 *   <li>{@code "hang"}: an update with the prompt facts only, then nothing (until cancelled)
 *   <li>{@code "slow"}: an update with the prompt facts only, then after 600 ms the default answer
 *   <li>(the prompt is the last message's content, or a completion's prompt: its text, or its ids
 *       as {@code "[1, 2]"}, which are then the prompt's ids)
 *   <li>anything else: two updates, one per step: per choice {@code "Hello"} (id 100+i), then
 *       {@code " world"} (id 200+i) finishing with {@code stop} and the stop reason from the first
 *       stop string (or null), and the usage
 * </ul>
 *
 * <p>Its status counts as a worker's would: prompt tokens of every started generation, generated
 * tokens of every completed one, and as running the {@code "hang"} generations (they never end).
 */
final class FakeWorker {
  static final int MAX_MODEL_LEN = 128;
  static final List<Integer> PROMPT_IDS = List.of(1, 2, 3);

  private FakeWorker() {}

  /** What one fake worker has done, for its status. */
  private static final class Counts {
    long promptTokens;
    long generationTokens;
    int hanging;
  }

  static Behavior<Command> create(String policy, ActorRef<Object> seen) {
    Counts counts = new Counts();
    return Behaviors.receive(Command.class)
        .onMessage(
            Generate.class,
            g -> {
              seen.tell(g);
              if (policy.equals("fcfs") && g.request().priority() != 0)
                // the real worker's rule, so routes can be seen passing its refusal on
                g.replyTo()
                    .tell(
                        new Failed(
                            g.request().requestId(),
                            ErrorKind.BAD_REQUEST,
                            "Got priority "
                                + g.request().priority()
                                + " but model `fake` does not use priority scheduling",
                            "priority"));
              else generate(g.request(), g.replyTo(), counts);
              return Behaviors.same();
            })
        .onMessage(
            GetStatus.class,
            s -> {
              s.replyTo()
                  .tell(
                      new WorkerStatus(
                          "fake#0",
                          "fake",
                          MAX_MODEL_LEN,
                          policy,
                          0,
                          counts.hanging,
                          0,
                          4,
                          16,
                          0,
                          counts.promptTokens,
                          counts.generationTokens,
                          counts.promptTokens,
                          counts.promptTokens / 3,
                          latencies(counts)));
              return Behaviors.same();
            })
        .onMessage(
            Tokenize.class,
            t -> {
              seen.tell(t);
              if (t.prompt() != null && t.prompt().equals("bad"))
                t.replyTo().tell(new Rejected(ErrorKind.BAD_REQUEST, "cannot tokenize", "prompt"));
              else
                t.replyTo()
                    .tell(
                        new Tokenized(
                            List.of(5, 6, 7),
                            t.returnTokenStrs() ? List.of("a", "b", "c") : null,
                            MAX_MODEL_LEN));
              return Behaviors.same();
            })
        .onMessage(
            Detokenize.class,
            d -> {
              seen.tell(d);
              d.replyTo().tell(new Detokenized("text of " + d.tokens()));
              return Behaviors.same();
            })
        .onAnyMessage(
            m -> {
              seen.tell(m);
              return Behaviors.same();
            })
        .build();
  }

  private static void generate(GenerationRequest r, ActorRef<GenerationEvent> to, Counts counts) {
    String id = r.requestId();
    // a chat's last message, or a completion's prompt (its ids as text when it was ids)
    String prompt =
        r.messages() != null
            ? String.valueOf(r.messages().get(r.messages().size() - 1).get("content"))
            : r.promptTokenIds() != null ? r.promptTokenIds().toString() : r.prompt();
    List<Integer> promptIds = r.promptTokenIds() != null ? r.promptTokenIds() : PROMPT_IDS;
    switch (prompt) {
      case "bad prompt" -> {
        to.tell(
            new Failed(
                id,
                ErrorKind.BAD_REQUEST,
                "This model's maximum context length is 128 tokens.",
                "messages"));
        return;
      }
      case "busy" -> {
        to.tell(new Failed(id, ErrorKind.OVERLOADED, "The waiting queue of fake#0 is full.", null));
        return;
      }
      default -> {}
    }
    List<LogprobEntry> promptLogprobs = null;
    if (r.sampling().promptLogprobs() != null) {
      promptLogprobs = new ArrayList<>();
      promptLogprobs.add(null);
      promptLogprobs.add(entry(2, "b", -0.5));
      promptLogprobs.add(entry(3, "c", -0.25));
    }
    Started started =
        new Started(
            "fake#0",
            null,
            0,
            promptIds.size(),
            r.returnTokenIds() ? promptIds : null,
            promptLogprobs);
    counts.promptTokens += promptIds.size();
    if (prompt.equals("hang") || prompt.equals("slow")) {
      to.tell(new GenerationUpdate(id, started, List.of(), null));
      if (prompt.equals("hang")) {
        counts.hanging++;
        return;
      }
      // The rest of the answer, later and in order, as a worker busy with other requests would
      // send it.
      counts.generationTokens += 2L * r.sampling().n();
      List<GenerationEvent> rest = answer(r, id, null, prompt);
      java.util.concurrent.CompletableFuture.delayedExecutor(
              600, java.util.concurrent.TimeUnit.MILLISECONDS)
          .execute(() -> rest.forEach(to::tell));
      return;
    }
    if (!prompt.equals("crash midway")) counts.generationTokens += 2L * r.sampling().n();
    answer(r, id, started, prompt).forEach(to::tell);
  }

  /**
   * The scripted answer: one update per step (both words of every choice, the second with its
   * finish and the usage), as a worker sends it.
   */
  private static List<GenerationEvent> answer(
      GenerationRequest r, String id, Started started, String prompt) {
    int n = r.sampling().n();
    boolean logprobs = r.sampling().logprobs() != null;
    Object stopReason = r.sampling().stop().isEmpty() ? null : r.sampling().stop().get(0);
    List<ChoiceUpdate> first = new ArrayList<>();
    List<ChoiceUpdate> second = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      first.add(
          new ChoiceUpdate(
              i,
              "Hello",
              List.of(100 + i),
              logprobs ? List.of(entry(100 + i, "Hello", -0.1)) : null,
              null,
              null));
      second.add(
          new ChoiceUpdate(
              i,
              " world",
              List.of(200 + i),
              logprobs ? List.of(entry(200 + i, " world", -0.2)) : null,
              FinishReason.STOP,
              stopReason));
    }
    List<GenerationEvent> to = new ArrayList<>();
    to.add(new GenerationUpdate(id, started, first, null));
    if (prompt.equals("crash midway")) {
      to.add(
          new Failed(
              id,
              ErrorKind.INTERNAL,
              "engine exploded: NullPointerException at Foo.java:12",
              null));
      return to;
    }
    int promptTokens = r.promptTokenIds() != null ? r.promptTokenIds().size() : PROMPT_IDS.size();
    to.add(new GenerationUpdate(id, null, second, new Usage(promptTokens, 2 * n, 0)));
    return to;
  }

  private static LogprobEntry entry(int id, String token, double logprob) {
    return new LogprobEntry(
        new TokenLogprob(id, token, logprob, 1),
        List.of(
            new TokenLogprob(id, token, logprob, 1),
            new TokenLogprob(7, "alt", -3.0, 2),
            new TokenLogprob(8, "other", -4.0, 3)));
  }

  /** One 0.1 s observation per started generation in every latency histogram. */
  private static Latencies latencies(Counts counts) {
    long n = counts.promptTokens / PROMPT_IDS.size();
    double[] bounds = {0.05, 0.5};
    Histogram h = new Histogram(bounds, new long[] {0, n, 0}, 0.1 * n);
    return new Latencies(h, h, h, h, h);
  }
}
