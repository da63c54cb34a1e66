package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One chat generation as the worker sees it: the conversation (JSON-like values, exactly as the
 * chat template wants them), the prompt controls, and the {@link SamplingParams}. Built by the
 * gateway's request mapper through {@link #builder}; never holds HTTP records. Everything that
 * needs the model (rendering, tokenizing, context length, the model's sampling defaults) is the
 * worker's.
 *
 * <p>JSON-like values are String, Number, Boolean, null, List and Map, so the record round-trips
 * through Jackson CBOR unchanged (numbers may come back as a different boxed type).
 *
 * @param requestId unique per in-flight request on a worker (the gateway adds a suffix if needed)
 * @param messages conversation messages ({@code role}, {@code content}, ...); null when {@code
 *     prompt} is given instead
 * @param prompt a raw prompt string used instead of {@code messages} (no chat template); null for
 *     chat
 * @param tools tool definitions handed to the template, or null
 * @param documents RAG documents handed to the template, or null
 * @param addGenerationPrompt append the assistant header (vLLM default true)
 * @param continueFinalMessage leave the final message open; never together with addGenerationPrompt
 * @param addSpecialTokens let the tokenizer add its special tokens (BOS...) on top of the template
 * @param chatTemplate a request-supplied Jinja template, or null for the model's own
 * @param chatTemplateKwargs extra template variables (e.g. {@code enable_thinking}); never null
 * @param reasoningEffort low/medium/high handed to the template as {@code reasoning_effort}, or
 *     null
 * @param truncatePromptTokens null = off; -1 = keep the last max_model_len tokens; N = keep last N
 * @param priority lower runs earlier (only with the priority scheduling policy; else must be 0)
 * @param cacheSalt salts the prefix cache, or null
 * @param sampling sampling and stopping
 * @param returnTokenIds the client wants the prompt's token ids (generated ids always travel)
 * @param returnTokensAsTokenIds logprob token strings are written as {@code token_id:N}
 * @param adapter the trained checkpoint (LoRA adapter) to generate with, or null for the base model
 * @param promptTokenIds the prompt as token ids: as the gateway already rendered and tokenized it
 *     (with the model's own template and tokenizer, to route it by cached prefix), or as a {@code
 *     /v1/completions} client sent them (then {@code prompt} is empty); null: the worker renders
 *     and tokenizes the prompt. The worker truncates and checks these ids (vocabulary, context
 *     length) as it would its own
 * @param resume the output already delivered when the request continues on another replica after
 *     its first one was lost (migration); null for a new request. Set by the gateway only, never
 *     from a client's body
 * @param toolCalling how the output becomes tool calls ({@link ToolCalling#NONE}: plain content)
 * @param streamed the client streams: tool calls are parsed as the text grows; otherwise once, from
 *     the whole output (vLLM's full and stream generators differ in that)
 * @param kvTransfer disaggregated prefill/decode (vLLM's {@code kv_transfer_params}): prefill only
 *     and lease the prompt's KV blocks, or pull them from a prefill replica and decode; null: both
 *     phases here. Set by the gateway only
 */
public record GenerationRequest(
    String requestId,
    List<Map<String, Object>> messages,
    String prompt,
    List<Map<String, Object>> tools,
    List<Map<String, Object>> documents,
    boolean addGenerationPrompt,
    boolean continueFinalMessage,
    boolean addSpecialTokens,
    String chatTemplate,
    Map<String, Object> chatTemplateKwargs,
    String reasoningEffort,
    Integer truncatePromptTokens,
    int priority,
    String cacheSalt,
    SamplingParams sampling,
    boolean returnTokenIds,
    boolean returnTokensAsTokenIds,
    Adapter adapter,
    List<Integer> promptTokenIds,
    Resume resume,
    ToolCalling toolCalling,
    boolean streamed,
    KvTransfer kvTransfer)
    implements CborSerializable {

  /**
   * A request continued after the replica generating it was lost: per choice the token ids its
   * client already received, and whether the choice had finished. The new replica renders and
   * tokenizes the prompt again, replays these tokens through each choice's sampler, stops and
   * detokenizer (restoring penalties, {@code min_tokens}, the {@code max_tokens} budget, the seeded
   * random stream and held-back stop-string text) without emitting them, prefills prompt + tokens,
   * and continues where the first replica stopped. Its usage counts the replayed tokens too.
   *
   * @param choices one entry per choice, in index order ({@code n} entries)
   */
  public record Resume(List<ResumedChoice> choices) implements CborSerializable {
    public Resume {
      if (choices == null || choices.isEmpty())
        throw new IllegalArgumentException("a resume needs its choices");
      choices = List.copyOf(choices);
    }

    /** Tokens delivered, over every choice. */
    public int totalTokens() {
      int total = 0;
      for (ResumedChoice c : choices) total += c.tokenIds().size();
      return total;
    }
  }

  /**
   * One choice of a {@link Resume}.
   *
   * @param tokenIds the ids its client received, in order
   * @param finished the choice has ended (nothing more is generated for it)
   */
  public record ResumedChoice(List<Integer> tokenIds, boolean finished)
      implements CborSerializable {
    public ResumedChoice {
      tokenIds = tokenIds == null ? List.of() : List.copyOf(tokenIds);
    }
  }

  /**
   * A trained model's checkpoint, served as a LoRA adapter over the worker's base model. The worker
   * loads {@code directory} (PEFT layout) the first time a request names it, or earlier when the
   * trainer announces it; a request keeps the adapter it started with to its end.
   *
   * @param modelId the trainable model's UUID
   * @param step the checkpoint step (step 0 is the base model: no directory)
   * @param directory the checkpoint directory on storage every worker node can read; null for step
   *     0
   */
  public record Adapter(String modelId, long step, String directory) implements CborSerializable {
    public Adapter {
      if (modelId == null || modelId.isBlank())
        throw new IllegalArgumentException("modelId is required");
      if (step < 0) throw new IllegalArgumentException("step must be >= 0");
      if (step > 0 && (directory == null || directory.isBlank()))
        throw new IllegalArgumentException("a step after 0 needs its checkpoint directory");
    }

    /** {@code <modelId>:step<N>}: what the response reports as {@code system_fingerprint}. */
    public String name() {
      return modelId + ":step" + step;
    }

    /** Step 0 is the untrained base model: no adapter to apply. */
    public boolean isBase() {
      return step == 0;
    }
  }

  public GenerationRequest {
    if (requestId == null || requestId.isBlank())
      throw new IllegalArgumentException("requestId is required");
    if ((messages == null) == (prompt == null))
      throw new IllegalArgumentException("exactly one of messages and prompt is required");
    if (sampling == null) throw new IllegalArgumentException("sampling is required");
    if (truncatePromptTokens != null && truncatePromptTokens < -1)
      throw new IllegalArgumentException("truncatePromptTokens must be >= -1");
    if (continueFinalMessage && addGenerationPrompt)
      throw new IllegalArgumentException(
          "continueFinalMessage and addGenerationPrompt cannot both be set");
    messages = messages == null ? null : List.copyOf(messages);
    tools = tools == null ? null : List.copyOf(tools);
    documents = documents == null ? null : List.copyOf(documents);
    chatTemplateKwargs = jsonObject(chatTemplateKwargs);
    promptTokenIds = promptTokenIds == null ? null : List.copyOf(promptTokenIds);
    if (toolCalling == null) toolCalling = ToolCalling.NONE;
  }

  /** JSON objects may hold null values, which {@code Map.copyOf} refuses; keep insertion order. */
  private static Map<String, Object> jsonObject(Map<String, Object> map) {
    return map == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(map));
  }

  /** A builder with vLLM's defaults for every prompt control and OpenAI's sampling defaults. */
  public static Builder builder(String requestId) {
    return new Builder(requestId);
  }

  /** A builder holding this record's values. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** A chat request with vLLM's defaults for every prompt control: the common case in tests. */
  public static GenerationRequest chat(
      String requestId, List<Map<String, Object>> messages, SamplingParams sampling) {
    return builder(requestId).messages(messages).sampling(sampling).build();
  }

  /** A raw-prompt request (no chat template). */
  public static GenerationRequest prompt(String requestId, String prompt, SamplingParams sampling) {
    return builder(requestId).prompt(prompt).sampling(sampling).build();
  }

  /** A copy with another priority (tests and the bench drive the scheduler through this). */
  public GenerationRequest withPriority(int newPriority) {
    return toBuilder().priority(newPriority).build();
  }

  /** A copy generating with {@code newAdapter} (null: the base model). */
  public GenerationRequest withAdapter(Adapter newAdapter) {
    return toBuilder().adapter(newAdapter).build();
  }

  /** A copy carrying the prompt's token ids as the gateway computed them (null: none). */
  public GenerationRequest withPromptTokenIds(List<Integer> ids) {
    return toBuilder().promptTokenIds(ids).build();
  }

  /** A copy continuing from {@code delivered} on another replica (null: a new request). */
  public GenerationRequest withResume(Resume delivered) {
    return toBuilder().resume(delivered).build();
  }

  /** A copy with another KV transfer (null: both phases on one replica). */
  public GenerationRequest withKvTransfer(KvTransfer transfer) {
    return toBuilder().kvTransfer(transfer).build();
  }

  /** A copy with other sampling parameters. */
  public GenerationRequest withSampling(SamplingParams newSampling) {
    return toBuilder().sampling(newSampling).build();
  }

  /** Builds a {@link GenerationRequest} by name; unset fields take vLLM's defaults. */
  public static final class Builder {
    private String requestId;
    private List<Map<String, Object>> messages;
    private String prompt;
    private List<Map<String, Object>> tools;
    private List<Map<String, Object>> documents;
    private boolean addGenerationPrompt = true;
    private boolean continueFinalMessage;
    private boolean addSpecialTokens;
    private String chatTemplate;
    private Map<String, Object> chatTemplateKwargs = Map.of();
    private String reasoningEffort;
    private Integer truncatePromptTokens;
    private int priority;
    private String cacheSalt;
    private SamplingParams sampling = SamplingParams.builder().build();
    private boolean returnTokenIds;
    private boolean returnTokensAsTokenIds;
    private Adapter adapter;
    private List<Integer> promptTokenIds;
    private Resume resume;
    private ToolCalling toolCalling = ToolCalling.NONE;
    private boolean streamed;
    private KvTransfer kvTransfer;

    private Builder(String requestId) {
      this.requestId = requestId;
    }

    private Builder(GenerationRequest r) {
      requestId = r.requestId;
      messages = r.messages;
      prompt = r.prompt;
      tools = r.tools;
      documents = r.documents;
      addGenerationPrompt = r.addGenerationPrompt;
      continueFinalMessage = r.continueFinalMessage;
      addSpecialTokens = r.addSpecialTokens;
      chatTemplate = r.chatTemplate;
      chatTemplateKwargs = r.chatTemplateKwargs;
      reasoningEffort = r.reasoningEffort;
      truncatePromptTokens = r.truncatePromptTokens;
      priority = r.priority;
      cacheSalt = r.cacheSalt;
      sampling = r.sampling;
      returnTokenIds = r.returnTokenIds;
      returnTokensAsTokenIds = r.returnTokensAsTokenIds;
      adapter = r.adapter;
      promptTokenIds = r.promptTokenIds;
      resume = r.resume;
      toolCalling = r.toolCalling;
      streamed = r.streamed;
      kvTransfer = r.kvTransfer;
    }

    public Builder requestId(String v) {
      requestId = v;
      return this;
    }

    /** The conversation; clears {@link #prompt}. */
    public Builder messages(List<Map<String, Object>> v) {
      messages = v;
      if (v != null) prompt = null;
      return this;
    }

    /** A raw prompt instead of a conversation; clears {@link #messages}. */
    public Builder prompt(String v) {
      prompt = v;
      if (v != null) messages = null;
      return this;
    }

    public Builder tools(List<Map<String, Object>> v) {
      tools = v;
      return this;
    }

    public Builder documents(List<Map<String, Object>> v) {
      documents = v;
      return this;
    }

    public Builder addGenerationPrompt(boolean v) {
      addGenerationPrompt = v;
      return this;
    }

    public Builder continueFinalMessage(boolean v) {
      continueFinalMessage = v;
      return this;
    }

    public Builder addSpecialTokens(boolean v) {
      addSpecialTokens = v;
      return this;
    }

    public Builder chatTemplate(String v) {
      chatTemplate = v;
      return this;
    }

    public Builder chatTemplateKwargs(Map<String, Object> v) {
      chatTemplateKwargs = v;
      return this;
    }

    public Builder reasoningEffort(String v) {
      reasoningEffort = v;
      return this;
    }

    public Builder truncatePromptTokens(Integer v) {
      truncatePromptTokens = v;
      return this;
    }

    public Builder priority(int v) {
      priority = v;
      return this;
    }

    public Builder cacheSalt(String v) {
      cacheSalt = v;
      return this;
    }

    public Builder sampling(SamplingParams v) {
      sampling = v;
      return this;
    }

    public Builder returnTokenIds(boolean v) {
      returnTokenIds = v;
      return this;
    }

    public Builder returnTokensAsTokenIds(boolean v) {
      returnTokensAsTokenIds = v;
      return this;
    }

    public Builder adapter(Adapter v) {
      adapter = v;
      return this;
    }

    public Builder promptTokenIds(List<Integer> v) {
      promptTokenIds = v;
      return this;
    }

    public Builder resume(Resume v) {
      resume = v;
      return this;
    }

    public Builder toolCalling(ToolCalling v) {
      toolCalling = v;
      return this;
    }

    public Builder streamed(boolean v) {
      streamed = v;
      return this;
    }

    public Builder kvTransfer(KvTransfer v) {
      kvTransfer = v;
      return this;
    }

    public GenerationRequest build() {
      return new GenerationRequest(
          requestId,
          messages,
          prompt,
          tools,
          documents,
          addGenerationPrompt,
          continueFinalMessage,
          addSpecialTokens,
          chatTemplate,
          chatTemplateKwargs,
          reasoningEffort,
          truncatePromptTokens,
          priority,
          cacheSalt,
          sampling,
          returnTokenIds,
          returnTokensAsTokenIds,
          adapter,
          promptTokenIds,
          resume,
          toolCalling,
          streamed,
          kvTransfer);
    }
  }
}
