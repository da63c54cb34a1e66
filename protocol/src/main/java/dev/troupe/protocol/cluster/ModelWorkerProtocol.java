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
 * <p>A {@link Generate} is answered by a stream of {@link GenerationEvent}s to {@code replyTo}: an
 * {@link Accepted} first when asked for, then one {@link GenerationUpdate} per engine step with
 * news for the request (the first carries {@link Started}, the last the usage), or a {@link Failed}
 * (before or after updates), or a {@link Migrate} when the replica leaves while the request is in
 * flight. The worker watches {@code replyTo}: when it stops, the request is cancelled and its KV
 * blocks freed within one step.
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

  /**
   * Starts a generation; events go to {@code replyTo} until the last update, a {@link Failed} or a
   * {@link Migrate}.
   *
   * @param acknowledge answer {@link Accepted} at once, before any update: the requester learns
   *     which worker to watch while the request is still queued (the gateway always asks)
   */
  public record Generate(
      GenerationRequest request, ActorRef<GenerationEvent> replyTo, boolean acknowledge)
      implements Command {
    public Generate {
      if (request == null) throw new IllegalArgumentException("request is required");
      if (replyTo == null) throw new IllegalArgumentException("replyTo is required");
    }

    /** A generation without the {@link Accepted} acknowledgement. */
    public Generate(GenerationRequest request, ActorRef<GenerationEvent> replyTo) {
      this(request, replyTo, false);
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

  /**
   * Turns token ids back into text, as vLLM's {@code /detokenize} (special tokens left out), or
   * keeping special tokens (a completion's echoed prompt, as vLLM decodes it).
   */
  public record Detokenize(
      List<Integer> tokens, boolean skipSpecialTokens, ActorRef<DetokenizeReply> replyTo)
      implements Command {
    public Detokenize {
      tokens = List.copyOf(tokens);
      if (replyTo == null) throw new IllegalArgumentException("replyTo is required");
    }

    /** {@code /detokenize}: special tokens left out. */
    public Detokenize(List<Integer> tokens, ActorRef<DetokenizeReply> replyTo) {
      this(tokens, true, replyTo);
    }
  }

  /** Asks for the worker's load and model facts (routing, /v1/models, /cluster/workers). */
  public record GetStatus(ActorRef<WorkerStatus> replyTo) implements Command {
    public GetStatus {
      if (replyTo == null) throw new IllegalArgumentException("replyTo is required");
    }
  }

  /**
   * Asks for the worker's status with its {@link WorkerStatus.Details} (node, device, adapters,
   * throughput), for the cluster view. Unlike {@link GetStatus} it is answered while the replica
   * drains too: it describes, it does not probe for new work.
   */
  public record Describe(ActorRef<WorkerStatus> replyTo) implements Command {
    public Describe {
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

  // ---------------------------------------------------------------- generation events

  /**
   * What a generation sends its requester: one {@link GenerationUpdate} per engine step that has
   * news for it (the last one carries the usage), or a single {@link Failed}.
   */
  public sealed interface GenerationEvent extends CborSerializable
      permits Accepted, GenerationUpdate, UpdatePart, Failed, Migrate {
    String requestId();
  }

  /**
   * A slice of a {@link GenerationUpdate} too large for one frame of Artery's large-message lane
   * ({@link LargeMessages}; prompt logprobs of a long prompt, say) sent to a requester on another
   * node, which Artery would drop: the update serialized and cut into slices, sent in order (Artery
   * keeps the order between two actors). The requester joins the slices of a request id and, at the
   * last, deserializes the update ({@code serializerId}, {@code manifest}) and handles it as if it
   * had come whole. Never sent to a requester on the same node.
   */
  public record UpdatePart(
      String requestId, byte[] bytes, boolean last, int serializerId, String manifest)
      implements GenerationEvent {
    public UpdatePart {
      if (requestId == null || requestId.isBlank())
        throw new IllegalArgumentException("requestId is required");
      if (bytes == null) throw new IllegalArgumentException("bytes is required");
      if (manifest == null) throw new IllegalArgumentException("manifest is required");
    }
  }

  /**
   * The worker took the request (sent only when {@link Generate#acknowledge()} asked for it, before
   * anything else): who to watch from now on, though the request may still wait in its queues.
   *
   * @param servedBy the replica's entity id ({@code model#replica})
   * @param worker the replica's actor, for death watch and to locate its node
   */
  public record Accepted(String requestId, String servedBy, ActorRef<Command> worker)
      implements GenerationEvent {
    public Accepted {
      if (requestId == null || requestId.isBlank())
        throw new IllegalArgumentException("requestId is required");
      if (servedBy == null || servedBy.isBlank())
        throw new IllegalArgumentException("servedBy is required");
    }
  }

  /**
   * The replica is going away (its shard is handed off to another node, or its node shuts down) and
   * has dropped the request: resubmit it elsewhere with what was received so far ({@link
   * GenerationRequest#resume()}). Nothing more follows from this replica for the request.
   *
   * @param reason why, for the logs
   */
  public record Migrate(String requestId, String reason) implements GenerationEvent {
    public Migrate {
      if (requestId == null || requestId.isBlank())
        throw new IllegalArgumentException("requestId is required");
      if (reason == null) throw new IllegalArgumentException("reason is required");
    }
  }

  /**
   * One engine step's output for one request: every choice's news of that step in one message, so
   * that the gateway can write it as is (no windows, no hold-back). The first update carries {@link
   * #started()}; the last carries {@link #usage()}, after which nothing follows.
   *
   * <p>Every update carries each choice's new token ids, so a requester holding the original
   * request and the ids received per choice can resubmit it elsewhere (migration).
   *
   * @param started the prompt facts and who serves the request, on the first update only
   * @param choices the choices with news, in index order
   * @param usage token counts on the last update only (every choice has finished), else null
   * @param kvHandle where the prompt's KV blocks wait for a decode replica: on the last update of a
   *     {@link KvTransfer.RemoteDecode} request only, else null
   */
  public record GenerationUpdate(
      String requestId, Started started, List<ChoiceUpdate> choices, Usage usage, KvHandle kvHandle)
      implements GenerationEvent {
    public GenerationUpdate {
      if (requestId == null || requestId.isBlank())
        throw new IllegalArgumentException("requestId is required");
      choices = choices == null ? List.of() : List.copyOf(choices);
      if (kvHandle != null && usage == null)
        throw new IllegalArgumentException("a kvHandle travels on the last update only");
    }

    /** An update without a KV handle (every request but a remote-decode one's last update). */
    public GenerationUpdate(
        String requestId, Started started, List<ChoiceUpdate> choices, Usage usage) {
      this(requestId, started, choices, usage, null);
    }

    /** The request's last update: every choice has finished. */
    public boolean done() {
      return usage != null;
    }
  }

  /**
   * The first update's facts: the prompt and who generates the request.
   *
   * @param servedBy the replica's entity id ({@code model#replica})
   * @param worker the replica's actor, to watch (a requester notices the worker's death by it);
   *     null only in tests
   * @param weightVersion version of the weights generating this request (the checkpoint step)
   * @param promptTokens the prompt's length in tokens, after templating and truncation
   * @param promptTokenIds the prompt's ids when the request asked for them ({@code
   *     return_token_ids}), else null
   * @param promptLogprobs when asked for: one entry per prompt token, the first null (vLLM's shape)
   */
  public record Started(
      String servedBy,
      ActorRef<Command> worker,
      long weightVersion,
      int promptTokens,
      List<Integer> promptTokenIds,
      List<LogprobEntry> promptLogprobs)
      implements CborSerializable {
    public Started {
      promptTokenIds = promptTokenIds == null ? null : List.copyOf(promptTokenIds);
      promptLogprobs = promptLogprobs == null ? null : nullableList(promptLogprobs);
    }
  }

  /**
   * One choice's news of one step.
   *
   * @param index choice index (0-based)
   * @param text newly final text (may be empty while a stop string is held back)
   * @param tokenIds the ids generated in this step (a beam's whole output at its end; none when the
   *     choice only finishes)
   * @param logprobs one entry per id when logprobs were asked for, else null
   * @param finishReason why the choice ended with this step, or null while it runs
   * @param stopReason the matched stop string (String), stop token id (Integer), or null
   * @param reasoning newly final reasoning text (the model's reasoning parser split it from the
   *     content); empty when none
   * @param toolCalls new tool-call pieces of this step, in order; empty when none
   * @param split where the choice's text stands after this step as its reasoning parser reads it
   *     (decides whether an empty part is {@code ""} or null, as vLLM's parsers do)
   */
  public record ChoiceUpdate(
      int index,
      String text,
      List<Integer> tokenIds,
      List<LogprobEntry> logprobs,
      FinishReason finishReason,
      Object stopReason,
      String reasoning,
      List<ToolCallPiece> toolCalls,
      TextSplit split)
      implements CborSerializable {

    /** News with reasoning or tool calls, of a choice that has not reasoned. */
    public ChoiceUpdate(
        int index,
        String text,
        List<Integer> tokenIds,
        List<LogprobEntry> logprobs,
        FinishReason finishReason,
        Object stopReason,
        String reasoning,
        List<ToolCallPiece> toolCalls) {
      this(
          index,
          text,
          tokenIds,
          logprobs,
          finishReason,
          stopReason,
          reasoning,
          toolCalls,
          TextSplit.CONTENT);
    }

    /** News without reasoning or tool calls. */
    public ChoiceUpdate(
        int index,
        String text,
        List<Integer> tokenIds,
        List<LogprobEntry> logprobs,
        FinishReason finishReason,
        Object stopReason) {
      this(index, text, tokenIds, logprobs, finishReason, stopReason, "", List.of());
    }

    public ChoiceUpdate {
      if (index < 0) throw new IllegalArgumentException("index must be >= 0");
      if (split == null) split = TextSplit.CONTENT;
      if (text == null) text = "";
      if (reasoning == null) reasoning = "";
      toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
      tokenIds = tokenIds == null ? List.of() : List.copyOf(tokenIds);
      logprobs = logprobs == null ? null : List.copyOf(logprobs);
      if (stopReason instanceof Number number) stopReason = number.intValue();
      else if (stopReason != null && !(stopReason instanceof String))
        throw new IllegalArgumentException("stopReason must be a String, an Integer or null");
      if (stopReason != null && finishReason == null)
        throw new IllegalArgumentException("a stopReason needs a finishReason");
    }

    public boolean finished() {
      return finishReason != null;
    }
  }

  /**
   * One streamed piece of a tool call (OpenAI's {@code delta.tool_calls[]}): the first piece of a
   * call carries {@code id} and {@code name} (its type is {@code function}), later ones a fragment
   * of the arguments; a call's fragments concatenate to its arguments JSON string.
   *
   * @param index the call's position among the choice's calls
   * @param id the call id (first piece only), else null
   * @param name the function name (first piece only), else null
   * @param arguments a fragment of the arguments, or null
   */
  public record ToolCallPiece(int index, String id, String name, String arguments)
      implements CborSerializable {
    public ToolCallPiece {
      if (index < 0) throw new IllegalArgumentException("index must be >= 0");
    }
  }

  /** Why a choice ended; {@link #wireName()} is the OpenAI/vLLM value. */
  /**
   * Where a choice's text stands as its reasoning parser reads it. vLLM's parsers report an empty
   * content as {@code ""} when the output never reasoned (a stop string matched at its very start,
   * EOS first) and as null when it did (cut in its reasoning, or nothing after {@code </think>});
   * an output that reasoned has a reasoning, {@code ""} at least.
   */
  public enum TextSplit {
    /** Content only so far (also: no reasoning parser). */
    CONTENT,
    /** In its reasoning. */
    REASONING,
    /** In the content after its reasoning. */
    AFTER_REASONING;

    /** Whether the output has entered its reasoning. */
    public boolean reasoned() {
      return this != CONTENT;
    }
  }

  public enum FinishReason {
    STOP,
    LENGTH,
    ABORT,
    TOOL_CALLS;

    public String wireName() {
      return name().toLowerCase(java.util.Locale.ROOT);
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
