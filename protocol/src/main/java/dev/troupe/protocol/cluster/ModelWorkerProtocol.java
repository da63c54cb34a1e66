package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * What the gateway (and trainers) say to a {@code ModelWorker} entity, and what it answers. One
 * entity per model replica, entity id {@code <model>#<replica>} (see {@link #entityId}), hosted on
 * nodes with role {@link #ROLE}; gateways reach it through a sharding proxy.
 *
 * <p>A {@link Generate} is answered by a stream of {@link GenerationEvent}s to {@code replyTo}:
 * {@link Started} once, then {@link TokenDelta}s and one {@link ChoiceFinished} per choice, then
 * {@link Completed}; or a single {@link Failed} (possibly after Started). The worker watches {@code
 * replyTo}: when it stops, the request is cancelled and its KV blocks freed within one step.
 */
public final class ModelWorkerProtocol {

  /** The sharded entity type of model workers. */
  public static final EntityTypeKey<Command> TYPE_KEY =
      EntityTypeKey.create(Command.class, "ModelWorker");

  /** Cluster role of the nodes that host model workers. */
  public static final String ROLE = Roles.WORKER;

  private ModelWorkerProtocol() {}

  /** The entity id of replica {@code replica} (0-based) of {@code model}: {@code model#replica}. */
  public static String entityId(String model, int replica) {
    if (model == null || model.isBlank()) throw new IllegalArgumentException("model is required");
    if (replica < 0) throw new IllegalArgumentException("replica must be >= 0");
    return model + "#" + replica;
  }

  /** Splits an entity id made by {@link #entityId}; the model name itself may contain '#'. */
  public static ReplicaId parseEntityId(String entityId) {
    int hash = entityId.lastIndexOf('#');
    if (hash <= 0 || hash == entityId.length() - 1)
      throw new IllegalArgumentException("not a model worker id: " + entityId);
    try {
      return new ReplicaId(
          entityId.substring(0, hash), Integer.parseInt(entityId.substring(hash + 1)));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not a model worker id: " + entityId, e);
    }
  }

  /** A model name and a replica index. */
  public record ReplicaId(String model, int replica) {
    public ReplicaId {
      if (model == null || model.isBlank()) throw new IllegalArgumentException("model is required");
      if (replica < 0) throw new IllegalArgumentException("replica must be >= 0");
    }

    public String entityId() {
      return ModelWorkerProtocol.entityId(model, replica);
    }
  }

  // ---------------------------------------------------------------- commands

  /** Everything a model worker accepts. */
  public interface Command extends CborSerializable {}

  /** Starts a generation; events go to {@code replyTo} until Completed or Failed. */
  public record Generate(GenerationRequest request, ActorRef<GenerationEvent> replyTo)
      implements Command {
    public Generate {
      if (request == null) throw new IllegalArgumentException("request is required");
      if (replyTo == null) throw new IllegalArgumentException("replyTo is required");
    }
  }

  /**
   * Aborts a request: its choices finish with {@code abort} (if the requester still listens) and
   * its blocks are freed before the next step. Unknown ids are ignored (it may have just finished).
   */
  public record Cancel(String requestId) implements Command {
    public Cancel {
      if (requestId == null || requestId.isBlank())
        throw new IllegalArgumentException("requestId is required");
    }
  }

  /**
   * Tokenizes a chat (rendered with the template) or a plain prompt, as vLLM's {@code /tokenize}.
   * Exactly one of {@code messages} and {@code prompt} is set.
   */
  public record Tokenize(
      List<Map<String, Object>> messages,
      String prompt,
      List<Map<String, Object>> tools,
      boolean addGenerationPrompt,
      boolean continueFinalMessage,
      boolean addSpecialTokens,
      String chatTemplate,
      Map<String, Object> chatTemplateKwargs,
      boolean returnTokenStrs,
      ActorRef<TokenizeReply> replyTo)
      implements Command {
    public Tokenize {
      if ((messages == null) == (prompt == null))
        throw new IllegalArgumentException("exactly one of messages and prompt is required");
      if (replyTo == null) throw new IllegalArgumentException("replyTo is required");
      messages = messages == null ? null : List.copyOf(messages);
      tools = tools == null ? null : List.copyOf(tools);
      chatTemplateKwargs = jsonObject(chatTemplateKwargs);
    }
  }

  /** Turns token ids back into text, as vLLM's {@code /detokenize}. */
  public record Detokenize(List<Integer> tokens, ActorRef<DetokenizeReply> replyTo)
      implements Command {
    public Detokenize {
      tokens = List.copyOf(tokens);
      if (replyTo == null) throw new IllegalArgumentException("replyTo is required");
    }
  }

  /** Asks for the worker's load and model facts (routing, /v1/models, /cluster/workers). */
  public record GetStatus(ActorRef<WorkerStatus> replyTo) implements Command {
    public GetStatus {
      if (replyTo == null) throw new IllegalArgumentException("replyTo is required");
    }
  }

  // ---------------------------------------------------------------- replies

  /** Why a request was refused; the gateway maps it to an HTTP status. */
  public enum ErrorKind {
    /** Invalid input (prompt too long, bad template, out-of-vocab ids...): 400. */
    BAD_REQUEST,
    /** The model is not served by this worker: 404. */
    NOT_FOUND,
    /** The waiting queue is full: 503. */
    OVERLOADED,
    /** A bug or an engine failure: 500. */
    INTERNAL
  }

  /** Reply to {@link Tokenize}. */
  public sealed interface TokenizeReply extends CborSerializable permits Tokenized, Rejected {}

  /** Reply to {@link Detokenize}. */
  public sealed interface DetokenizeReply extends CborSerializable permits Detokenized, Rejected {}

  /**
   * Token ids of a prompt.
   *
   * @param tokenStrs vocabulary strings of the ids, when asked for; else null
   * @param maxModelLen the model's context length
   */
  public record Tokenized(List<Integer> tokens, List<String> tokenStrs, int maxModelLen)
      implements TokenizeReply {
    public Tokenized {
      tokens = List.copyOf(tokens);
      tokenStrs = tokenStrs == null ? null : nullableList(tokenStrs);
    }

    public int count() {
      return tokens.size();
    }
  }

  /** Text of token ids. */
  public record Detokenized(String prompt) implements DetokenizeReply {}

  /** A refused Tokenize or Detokenize. */
  public record Rejected(ErrorKind kind, String message, String param)
      implements TokenizeReply, DetokenizeReply {
    public Rejected {
      if (kind == null) throw new IllegalArgumentException("kind is required");
      if (message == null) throw new IllegalArgumentException("message is required");
    }
  }

  /**
   * A worker's state for routing and monitoring.
   *
   * @param entityId {@code model#replica}
   * @param maxModelLen the model's context length
   * @param schedulingPolicy {@code fcfs} or {@code priority}
   * @param waiting requests queued, not yet running
   * @param running requests holding KV blocks
   * @param preemptions requests preempted since start
   * @param kvBlocksUsed KV blocks in use
   * @param kvBlocksTotal KV blocks in the cache
   * @param weightVersion version of the weights/adapter being served (0 = base)
   * @param promptTokens prompt tokens of the requests admitted since start (once per request,
   *     whatever n is)
   * @param generationTokens tokens generated since start, every choice counted
   */
  public record WorkerStatus(
      String entityId,
      String model,
      int maxModelLen,
      String schedulingPolicy,
      int waiting,
      int running,
      long preemptions,
      int kvBlocksUsed,
      int kvBlocksTotal,
      long weightVersion,
      long promptTokens,
      long generationTokens)
      implements CborSerializable {}

  // ---------------------------------------------------------------- generation events

  /** Events of one generation, all carrying its request id. */
  public sealed interface GenerationEvent extends CborSerializable
      permits Started, TokenDelta, ChoiceFinished, Completed, Failed {
    String requestId();
  }

  /**
   * The prompt was accepted and scheduled.
   *
   * @param promptTokenIds the prompt after templating, tokenizing and truncation
   * @param promptLogprobs when asked for: one entry per prompt token, the first null (vLLM's shape)
   * @param weightVersion version of the weights generating this request
   */
  public record Started(
      String requestId,
      List<Integer> promptTokenIds,
      List<LogprobEntry> promptLogprobs,
      long weightVersion)
      implements GenerationEvent {
    public Started {
      promptTokenIds = List.copyOf(promptTokenIds);
      promptLogprobs = promptLogprobs == null ? null : nullableList(promptLogprobs);
    }
  }

  /** New output of one engine step, for the choices that produced some. */
  public record TokenDelta(String requestId, List<ChoiceDelta> choices) implements GenerationEvent {
    public TokenDelta {
      choices = List.copyOf(choices);
    }
  }

  /**
   * One choice's increment.
   *
   * @param index choice index (0-based)
   * @param text newly final text (may be empty while a stop string is held back)
   * @param tokenIds the generated ids of this increment
   * @param logprobs one entry per id when logprobs were asked for, else null
   */
  public record ChoiceDelta(
      int index, String text, List<Integer> tokenIds, List<LogprobEntry> logprobs)
      implements CborSerializable {
    public ChoiceDelta {
      if (index < 0) throw new IllegalArgumentException("index must be >= 0");
      if (text == null) text = "";
      tokenIds = List.copyOf(tokenIds);
      logprobs = logprobs == null ? null : List.copyOf(logprobs);
    }
  }

  /** Why a choice ended; {@link #wireName()} is the OpenAI/vLLM value. */
  public enum FinishReason {
    STOP,
    LENGTH,
    ABORT;

    public String wireName() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * A choice ended.
   *
   * @param stopReason the matched stop string (String), stop token id (Integer), or null (EOS,
   *     length, abort)
   */
  public record ChoiceFinished(
      String requestId, int index, FinishReason finishReason, Object stopReason)
      implements GenerationEvent {
    public ChoiceFinished {
      if (finishReason == null) throw new IllegalArgumentException("finishReason is required");
      if (stopReason instanceof Number number) stopReason = number.intValue();
      else if (stopReason != null && !(stopReason instanceof String))
        throw new IllegalArgumentException("stopReason must be a String, an Integer or null");
    }
  }

  /** Every choice has finished; the request's blocks are free. */
  public record Completed(String requestId, Usage usage) implements GenerationEvent {
    public Completed {
      if (usage == null) throw new IllegalArgumentException("usage is required");
    }
  }

  /**
   * The request failed; no further events follow.
   *
   * @param param the request field at fault (e.g. {@code messages}, {@code max_tokens}), or null
   */
  public record Failed(String requestId, ErrorKind kind, String message, String param)
      implements GenerationEvent {
    public Failed {
      if (kind == null) throw new IllegalArgumentException("kind is required");
      if (message == null) throw new IllegalArgumentException("message is required");
    }
  }

  /**
   * Token counts of a finished request.
   *
   * @param promptTokens counted once, whatever n is
   * @param completionTokens summed over all choices, the terminating EOS/stop token included
   * @param cachedPromptTokens prompt tokens served from the prefix cache
   */
  public record Usage(int promptTokens, int completionTokens, int cachedPromptTokens)
      implements CborSerializable {
    public int totalTokens() {
      return promptTokens + completionTokens;
    }
  }

  /**
   * Log-probabilities at one position: the chosen (sampled, or prompt) token and the top ones.
   *
   * @param top the most likely tokens, best first (size = the requested top count)
   */
  public record LogprobEntry(TokenLogprob chosen, List<TokenLogprob> top)
      implements CborSerializable {
    public LogprobEntry {
      if (chosen == null) throw new IllegalArgumentException("chosen is required");
      top = top == null ? List.of() : List.copyOf(top);
    }
  }

  /**
   * One token's log-probability.
   *
   * @param token the decoded token text (or {@code token_id:N} when asked for)
   * @param logprob natural log, floored at -9999 as vLLM does
   * @param rank 1 = most likely
   */
  public record TokenLogprob(int tokenId, String token, double logprob, int rank)
      implements CborSerializable {}

  /** JSON objects may hold null values, which {@code Map.copyOf} refuses. */
  private static Map<String, Object> jsonObject(Map<String, Object> map) {
    return map == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(map));
  }

  /** Lists that may hold nulls (prompt logprobs start with one). */
  private static <T> List<T> nullableList(List<T> list) {
    return Collections.unmodifiableList(new ArrayList<>(list));
  }
}
