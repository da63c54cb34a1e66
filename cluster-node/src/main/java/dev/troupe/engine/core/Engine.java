package dev.troupe.engine.core;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.sampling.BeamSearch;
import dev.troupe.engine.sampling.EosTokens;
import dev.troupe.engine.sampling.InvalidSamplingParamsException;
import dev.troupe.engine.sampling.LogitsProcessorRegistry;
import dev.troupe.engine.sampling.Logprobs;
import dev.troupe.engine.sampling.Sample;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.engine.sampling.StopChecker;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceDelta;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceFinished;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Completed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.DetokenizeReply;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Detokenized;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.FinishReason;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Rejected;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenDelta;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenLogprob;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenize;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenizeReply;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Tokenized;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.scheduler.ScheduleResult;
import dev.troupe.scheduler.ScheduleResult.ScheduledChunk;
import dev.troupe.scheduler.Scheduler;
import dev.troupe.scheduler.SchedulingPolicy;
import dev.troupe.scheduler.Sequence;
import dev.troupe.scheduler.SequenceGroup;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * One model replica's inference engine: prompt preparation, the {@link Scheduler}, the {@link
 * ModelRunner} and, per choice, a sampler, a detokenizer and a stop checker. Plain Java; the owning
 * actor calls {@link #add}, {@link #step} and {@link #cancel} between messages, which is what makes
 * batching continuous.
 *
 * <p>Events per request: {@link Started} when its prompt has been prefilled (with the first tokens,
 * in the same step), then {@link TokenDelta}s, one {@link ChoiceFinished} per choice and {@link
 * Completed}; or a single {@link Failed} (always before Started). The n choices of a request share
 * one prefill: the prompt's sequence is forked once its logits exist.
 *
 * <p>Thread: confined to its owner's thread (the runner is). Not thread-safe.
 */
public final class Engine implements AutoCloseable {

  private final String modelName;
  private final ModelRunner runner;
  private final Tokenizer tokenizer;
  private final Scheduler scheduler;
  private final SamplerFactory samplers;
  private final EosTokens eos;
  private final Prompts prompts;
  private final int maxModelLen;
  private final SchedulingPolicy policy;
  private final SamplingDefaults samplingDefaults;
  private final Map<String, Active> active = new LinkedHashMap<>();
  private long weightVersion;
  private long generatedTokens;
  private long promptTokens;

  /**
   * @param templateCompiler compiles request-supplied chat templates (null: none accepted)
   */
  public Engine(
      String modelName,
      ModelRunner runner,
      TokenizerBundle text,
      EngineSettings settings,
      SchedulingPolicy policy,
      Function<String, ChatTemplate> templateCompiler) {
    this(modelName, runner, text, settings, policy, templateCompiler, SamplingDefaults.NONE);
  }

  /**
   * @param templateCompiler compiles request-supplied chat templates (null: none accepted)
   * @param samplingDefaults the model's generation-config sampling defaults, applied to the fields
   *     a request leaves unset
   */
  public Engine(
      String modelName,
      ModelRunner runner,
      TokenizerBundle text,
      EngineSettings settings,
      SchedulingPolicy policy,
      Function<String, ChatTemplate> templateCompiler,
      SamplingDefaults samplingDefaults) {
    this.modelName = modelName;
    this.samplingDefaults = samplingDefaults == null ? SamplingDefaults.NONE : samplingDefaults;
    this.runner = runner;
    this.tokenizer = text.tokenizer();
    this.policy = policy;
    int modelMax = runner.config().maxPositionEmbeddings();
    int cacheMax = runner.numBlocks() * runner.blockSize();
    int configured = settings.maxModelLen() > 0 ? settings.maxModelLen() : modelMax;
    // A single sequence must always fit the cache, or it could never finish.
    this.maxModelLen = Math.min(configured, cacheMax);
    this.scheduler =
        new Scheduler(settings.schedulerConfig(policy), runner.numBlocks(), runner.blockSize());
    int eosId = text.eosTokenId() != null ? text.eosTokenId() : -1;
    List<Integer> configEos = runner.config().eosTokenIds();
    if (eosId < 0 && !configEos.isEmpty()) eosId = configEos.get(0);
    this.eos = EosTokens.of(eosId, configEos);
    LogitsProcessorRegistry processors =
        settings.logitsProcessors().isEmpty()
            ? LogitsProcessorRegistry.none()
            : LogitsProcessorRegistry.allowing(settings.logitsProcessors());
    this.samplers = new SamplerFactory(runner.config().vocabSize(), tokenizer, eos, processors);
    this.prompts =
        new Prompts(
            text,
            templateCompiler,
            settings.allowRequestChatTemplate(),
            maxModelLen,
            runner.config().vocabSize());
  }

  public String modelName() {
    return modelName;
  }

  public int maxModelLen() {
    return maxModelLen;
  }

  public SchedulingPolicy policy() {
    return policy;
  }

  /**
   * The model's own sampling defaults (generation_config.json); {@link SamplingDefaults#NONE} if
   * none.
   */
  public SamplingDefaults samplingDefaults() {
    return samplingDefaults;
  }

  public Scheduler scheduler() {
    return scheduler;
  }

  public long weightVersion() {
    return weightVersion;
  }

  /** Prompt tokens of the requests admitted since start, once per request whatever n is. */
  public long promptTokens() {
    return promptTokens;
  }

  /** Tokens generated since start, every choice counted. */
  public long generatedTokens() {
    return generatedTokens;
  }

  public boolean hasWork() {
    return scheduler.hasWork();
  }

  public boolean isActive(String requestId) {
    return active.containsKey(requestId);
  }

  // ------------------------------------------------------------------ admission

  /**
   * Prepares and queues a request. Returns no events when it was queued, or one {@link Failed} (bad
   * input: 400; waiting queue full: overloaded).
   */
  public List<GenerationEvent> add(GenerationRequest request) {
    return add(request, 0, weightVersion);
  }

  /**
   * {@link #add(GenerationRequest)} on LoRA adapter {@code adapterId} ({@link #registerAdapter}; 0
   * = the base model): every chunk of the request runs with it, so the request ends on the adapter
   * it started with whatever is registered meanwhile.
   *
   * @param version the weight version reported in {@link Started} (the checkpoint step)
   */
  public List<GenerationEvent> add(GenerationRequest request, int adapterId, long version) {
    String id = request.requestId();
    try {
      if (active.containsKey(id))
        throw RequestRejected.badRequest(
            "request id " + id + " is already in flight", "request_id");
      if (!scheduler.hasRoom())
        throw new RequestRejected(
            ErrorKind.OVERLOADED,
            "The server is overloaded: "
                + scheduler.numWaiting()
                + " requests are already waiting for model "
                + modelName
                + ". Retry later.",
            null);
      if (policy == SchedulingPolicy.FCFS && request.priority() != 0)
        throw RequestRejected.badRequest(
            "Got priority "
                + request.priority()
                + " but model `"
                + modelName
                + "` does not use priority scheduling (its policy is "
                + policy.configName()
                + "); priority must be 0.",
            "priority");
      // The model's generation-config defaults, applied here and nowhere else.
      SamplingParams params = request.sampling().withDefaults(samplingDefaults);
      if (params.n() > scheduler.config().maxNumSeqs())
        throw RequestRejected.badRequest(
            "n ("
                + params.n()
                + ") exceeds the maximum number of running sequences ("
                + scheduler.config().maxNumSeqs()
                + ")",
            "n");
      int[] prompt = promptIds(request);
      params = capMaxTokens(params, prompt.length);
      if (!scheduler.config().chunkedPrefill()
          && prompt.length > scheduler.config().maxNumBatchedTokens())
        throw RequestRejected.badRequest(
            "prompt of "
                + prompt.length
                + " tokens exceeds the step budget ("
                + scheduler.config().maxNumBatchedTokens()
                + ") and chunked prefill is off",
            "messages");
      Choice[] choices = new Choice[params.n()];
      if (params.useBeamSearch()) {
        samplers.validate(params);
        for (int i = 0; i < choices.length; i++) choices[i] = new Choice(null, null);
        SequenceGroup group = scheduler.add(id, prompt, params.n(), request.priority());
        Active a = new Active(request, params, prompt, group, choices, adapterId, version);
        a.beam = BeamSearch.create(params, prompt.length, eos);
        active.put(id, a);
        promptTokens += prompt.length;
        return List.of();
      }
      for (int i = 0; i < choices.length; i++) {
        Tokenizer.IncrementalDetokenizer detokenizer =
            tokenizer.newDetokenizer(
                prompt, params.skipSpecialTokens(), params.spacesBetweenSpecialTokens());
        choices[i] =
            new Choice(
                samplers.create(params, prompt, i), new StopChecker(params, eos, detokenizer));
      }
      SequenceGroup group = scheduler.add(id, prompt, params.n(), request.priority());
      active.put(id, new Active(request, params, prompt, group, choices, adapterId, version));
      promptTokens += prompt.length;
      return List.of();
    } catch (RequestRejected e) {
      return List.of(new Failed(id, e.kind, e.getMessage(), e.param));
    } catch (InvalidSamplingParamsException e) {
      return List.of(new Failed(id, ErrorKind.BAD_REQUEST, e.getMessage(), e.param()));
    } catch (SamplingParams.InvalidValue e) {
      return List.of(new Failed(id, ErrorKind.BAD_REQUEST, e.getMessage(), e.param()));
    }
  }

  private int[] promptIds(GenerationRequest r) {
    String text =
        r.prompt() != null
            ? r.prompt()
            : prompts.render(
                r.messages(),
                r.tools(),
                r.documents(),
                r.addGenerationPrompt(),
                r.continueFinalMessage(),
                r.chatTemplate(),
                r.chatTemplateKwargs(),
                r.reasoningEffort());
    return prompts.promptIds(text, r.addSpecialTokens(), r.truncatePromptTokens());
  }

  /**
   * {@link SamplingParams#MAX_TOKENS_UNSET} means "up to the context", as vLLM's default; an
   * explicit value must fit beside the prompt.
   */
  private SamplingParams capMaxTokens(SamplingParams p, int promptLength) {
    int room = maxModelLen - promptLength;
    if (p.maxTokens() == SamplingParams.MAX_TOKENS_UNSET) return p.withMaxTokens(room);
    if (p.maxTokens() > room)
      throw RequestRejected.badRequest(
          "'max_tokens' or 'max_completion_tokens' is too large: "
              + p.maxTokens()
              + ". This model's maximum context length is "
              + maxModelLen
              + " tokens and your request has "
              + promptLength
              + " input tokens ("
              + p.maxTokens()
              + " > "
              + maxModelLen
              + " - "
              + promptLength
              + ").",
          "max_tokens");
    return p;
  }

  // ------------------------------------------------------------------ stepping

  /** Runs one scheduler step and one forward pass; returns the events it produced. */
  public List<GenerationEvent> step() {
    List<GenerationEvent> events = new ArrayList<>();
    ScheduleResult plan = scheduler.schedule();
    for (SequenceGroup group : plan.outOfMemory()) outOfMemory(group, events);
    if (plan.isEmpty()) return events;

    for (ScheduleResult.BlockCopy copy : plan.copies()) runner.copyBlock(copy.src(), copy.dst());
    List<SequenceChunk> batch = new ArrayList<>(plan.chunks().size());
    for (ScheduledChunk c : plan.chunks())
      batch.add(
          new SequenceChunk(
              c.tokens(),
              c.start(),
              c.blockTable(),
              wantsPromptLogits(c),
              active.get(c.sequence().group().requestId()).adapterId));
    List<float[][]> logits = runner.forward(batch);

    Map<Active, List<ChoiceDelta>> deltas = new LinkedHashMap<>();
    Map<Active, List<ChoiceFinished>> finishes = new LinkedHashMap<>();
    java.util.Set<Active> beamsToStep = new java.util.LinkedHashSet<>();
    for (int i = 0; i < batch.size(); i++) {
      ScheduledChunk chunk = plan.chunks().get(i);
      Active a = active.get(chunk.sequence().group().requestId());
      float[][] rows = logits.get(i);
      if (batch.get(i).allLogits()) collectPromptLogprobs(a, chunk, rows);
      if (!chunk.last()) continue;
      float[] last = rows[rows.length - 1];
      Sequence seq = chunk.sequence();
      if (a.beam != null) {
        if (!seq.group().forked()) {
          scheduler.markForked(seq.group());
          a.beamSeqs = List.of(seq);
          if (!a.started) {
            a.started = true;
            events.add(new Started(a.id(), boxed(a.prompt), a.promptLogprobs, a.version));
          }
        }
        a.beamRows.put(seq, last);
        beamsToStep.add(a);
        continue;
      }
      if (!seq.group().forked()) {
        // The prompt is prefilled: split it into the request's choices, sharing its blocks.
        List<Sequence> seqs = new ArrayList<>();
        seqs.add(seq);
        for (int c = 1; c < a.choices.length; c++) seqs.add(scheduler.fork(seq, c));
        scheduler.markForked(seq.group());
        if (!a.started) {
          a.started = true;
          events.add(new Started(a.id(), boxed(a.prompt), a.promptLogprobs, a.version));
        }
        for (Sequence s : seqs) advance(a, s, last, deltas, finishes);
      } else {
        advance(a, seq, last, deltas, finishes);
      }
    }
    for (Active a : beamsToStep)
      if (a.beamRows.keySet().containsAll(a.beamSeqs)) stepBeams(a, deltas, finishes);
    for (Active a : deltas.keySet()) events.add(new TokenDelta(a.id(), deltas.get(a)));
    for (Map.Entry<Active, List<ChoiceFinished>> e : finishes.entrySet()) {
      events.addAll(e.getValue());
      Active a = e.getKey();
      if (a.allFinished()) {
        active.remove(a.id());
        events.add(new Completed(a.id(), new Usage(a.prompt.length, a.completionTokens, 0)));
      }
    }
    return events;
  }

  /** Samples the next token of one sequence and feeds it to its choice's stop checker. */
  private void advance(
      Active a,
      Sequence seq,
      float[] logits,
      Map<Active, List<ChoiceDelta>> deltas,
      Map<Active, List<ChoiceFinished>> finishes) {
    Choice choice = a.choices[seq.index()];
    Sample sample = choice.sampler.next(logits);
    int token = sample.token();
    choice.sampler.accept(token);
    StopChecker.Update update = choice.stop.append(token);
    a.completionTokens++;
    generatedTokens++;
    List<LogprobEntry> logprobs =
        a.params.logprobs() == null ? null : List.of(logprobEntry(a, sample));
    deltas
        .computeIfAbsent(a, k -> new ArrayList<>())
        .add(new ChoiceDelta(seq.index(), update.delta(), List.of(token), logprobs));
    if (update.finished()) {
      scheduler.finish(seq);
      choice.finished = true;
      StopChecker.Finish f = update.finish();
      finishes
          .computeIfAbsent(a, k -> new ArrayList<>())
          .add(new ChoiceFinished(a.id(), seq.index(), finishReason(f), f.stopReason()));
    } else {
      seq.append(token);
    }
  }

  /**
   * One beam-search step for a request whose live beams all have logits: expand, then map the new
   * beams onto sequences (a beam's first child continues its sequence, further children fork it,
   * childless beams are freed). When the search ends the n best beams are reported whole.
   */
  private void stepBeams(
      Active a, Map<Active, List<ChoiceDelta>> deltas, Map<Active, List<ChoiceFinished>> finishes) {
    List<float[]> rows = new ArrayList<>(a.beamSeqs.size());
    for (Sequence s : a.beamSeqs) rows.add(a.beamRows.get(s));
    a.beamRows.clear();
    List<BeamSearch.Beam> next = a.beam.step(rows);
    if (a.beam.done()) {
      finishBeams(a, deltas, finishes);
      return;
    }
    Sequence[] seqs = new Sequence[next.size()];
    boolean[] continued = new boolean[a.beamSeqs.size()];
    for (int j = 0; j < next.size(); j++) {
      int parent = next.get(j).parent();
      Sequence p = a.beamSeqs.get(parent);
      if (!continued[parent]) {
        continued[parent] = true;
        seqs[j] = p;
      } else {
        seqs[j] = scheduler.fork(p, a.nextBeamIndex++);
      }
    }
    for (int p = 0; p < continued.length; p++)
      if (!continued[p]) scheduler.finish(a.beamSeqs.get(p));
    for (int j = 0; j < next.size(); j++) {
      int[] tokens = next.get(j).tokens();
      seqs[j].append(tokens[tokens.length - 1]);
    }
    a.beamSeqs = List.of(seqs);
  }

  private void finishBeams(
      Active a, Map<Active, List<ChoiceDelta>> deltas, Map<Active, List<ChoiceFinished>> finishes) {
    List<BeamSearch.Result> results = a.beam.results();
    SamplingParams p = a.params;
    for (int i = 0; i < results.size(); i++) {
      BeamSearch.Result r = results.get(i);
      String text =
          tokenizer.decode(r.textTokens(), p.skipSpecialTokens(), p.spacesBetweenSpecialTokens());
      a.completionTokens += r.tokens().length;
      generatedTokens += r.tokens().length;
      List<LogprobEntry> logprobs = null;
      if (p.logprobs() != null && r.details() != null) {
        logprobs = new ArrayList<>(r.details().size());
        for (BeamSearch.StepLogprobs d : r.details())
          logprobs.add(
              new LogprobEntry(
                  logprob(a, d.chosen()), d.top().stream().map(e -> logprob(a, e)).toList()));
      }
      deltas
          .computeIfAbsent(a, k -> new ArrayList<>())
          .add(new ChoiceDelta(i, text, boxed(r.tokens()), logprobs));
      FinishReason reason =
          r.finishReason() == dev.troupe.engine.sampling.FinishReason.STOP
              ? FinishReason.STOP
              : FinishReason.LENGTH;
      finishes
          .computeIfAbsent(a, k -> new ArrayList<>())
          .add(new ChoiceFinished(a.id(), i, reason, r.stopTokenId()));
    }
    for (int i = 0; i < a.choices.length; i++) {
      a.choices[i].finished = true;
      if (i >= results.size())
        finishes
            .computeIfAbsent(a, k -> new ArrayList<>())
            .add(new ChoiceFinished(a.id(), i, FinishReason.LENGTH, null));
    }
    scheduler.abort(a.id());
  }

  private boolean wantsPromptLogits(ScheduledChunk c) {
    Active a = active.get(c.sequence().group().requestId());
    return a.promptLogprobs != null
        && a.promptLogprobs.size() < a.prompt.length
        && c.start() < a.prompt.length;
  }

  /** Row j of a chunk predicts the token at position start + j + 1. */
  private void collectPromptLogprobs(Active a, ScheduledChunk chunk, float[][] rows) {
    int k = a.params.promptLogprobs();
    for (int j = 0; j < rows.length; j++) {
      int position = chunk.start() + j + 1;
      if (position >= a.prompt.length) break;
      if (position < a.promptLogprobs.size())
        continue; // already known (recompute after preemption)
      var entries = Logprobs.entries(rows[j], 0, rows[j].length, a.prompt[position], k);
      a.promptLogprobs.add(
          new LogprobEntry(
              logprob(a, entries.get(0)), entries.stream().map(e -> logprob(a, e)).toList()));
    }
  }

  private LogprobEntry logprobEntry(Active a, Sample sample) {
    List<dev.troupe.engine.sampling.TokenLogprob> all = sample.logprobs();
    TokenLogprob chosen = logprob(a, all.get(0));
    List<TokenLogprob> top =
        sample.chatTopLogprobs(a.params.logprobs()).stream().map(e -> logprob(a, e)).toList();
    return new LogprobEntry(chosen, top);
  }

  private TokenLogprob logprob(Active a, dev.troupe.engine.sampling.TokenLogprob e) {
    String text =
        a.request.returnTokensAsTokenIds()
            ? "token_id:" + e.tokenId()
            : tokenizer.decode(new int[] {e.tokenId()}, false, true);
    return new TokenLogprob(e.tokenId(), text, e.logprob(), e.rank());
  }

  private static FinishReason finishReason(StopChecker.Finish f) {
    return switch (f.reason()) {
      case STOP -> FinishReason.STOP;
      case LENGTH -> FinishReason.LENGTH;
      case ABORT -> FinishReason.ABORT;
    };
  }

  private void outOfMemory(SequenceGroup group, List<GenerationEvent> events) {
    Active a = active.remove(group.requestId());
    if (a == null) return;
    if (!a.started) {
      events.add(
          new Failed(
              a.id(),
              ErrorKind.BAD_REQUEST,
              "The request does not fit the KV cache of "
                  + runner.numBlocks()
                  + " blocks of "
                  + runner.blockSize()
                  + " tokens; reduce n or the prompt.",
              "messages"));
      return;
    }
    for (int i = 0; i < a.choices.length; i++) {
      if (a.choices[i].finished) continue;
      a.choices[i].finished = true;
      events.add(new ChoiceFinished(a.id(), i, FinishReason.LENGTH, null));
    }
    events.add(new Completed(a.id(), new Usage(a.prompt.length, a.completionTokens, 0)));
  }

  // ------------------------------------------------------------------ adapters

  /**
   * Makes LoRA adapter {@code id} (> 0) available to requests added with it; call between steps.
   */
  public void registerAdapter(int id, dev.troupe.engine.LoraAdapter adapter) {
    runner.registerAdapter(id, adapter);
  }

  /**
   * Forgets adapter {@code id}.
   *
   * @throws IllegalStateException while a request in flight runs on it
   */
  public void removeAdapter(int id) {
    if (adapterInUse(id)) throw new IllegalStateException("adapter " + id + " is in use");
    runner.removeAdapter(id);
  }

  /** True while a request in flight (waiting or running) was added with adapter {@code id}. */
  public boolean adapterInUse(int id) {
    for (Active a : active.values()) if (a.adapterId == id) return true;
    return false;
  }

  // ------------------------------------------------------------------ cancellation

  /**
   * Aborts a request: its blocks are freed now; the events finish every open choice with {@code
   * abort} (text held back for stop strings is flushed first). Unknown ids give no events.
   */
  public List<GenerationEvent> cancel(String requestId) {
    Active a = active.remove(requestId);
    if (a == null) return List.of();
    scheduler.abort(requestId);
    List<GenerationEvent> events = new ArrayList<>();
    if (!a.started) events.add(new Started(a.id(), boxed(a.prompt), null, a.version));
    List<ChoiceDelta> flushed = new ArrayList<>();
    List<ChoiceFinished> finished = new ArrayList<>();
    for (int i = 0; i < a.choices.length; i++) {
      Choice c = a.choices[i];
      if (c.finished) continue;
      c.finished = true;
      if (c.stop != null) {
        StopChecker.Update u = c.stop.abort();
        if (!u.delta().isEmpty()) flushed.add(new ChoiceDelta(i, u.delta(), List.of(), null));
      }
      finished.add(new ChoiceFinished(a.id(), i, FinishReason.ABORT, null));
    }
    if (!flushed.isEmpty()) events.add(new TokenDelta(a.id(), flushed));
    events.addAll(finished);
    events.add(new Completed(a.id(), new Usage(a.prompt.length, a.completionTokens, 0)));
    return events;
  }

  // ------------------------------------------------------------------ tokenizer endpoints

  /** vLLM's {@code /tokenize}. */
  public TokenizeReply tokenize(Tokenize t) {
    return tokenize(
        t.messages(),
        t.prompt(),
        t.tools(),
        t.addGenerationPrompt(),
        t.continueFinalMessage(),
        t.addSpecialTokens(),
        t.chatTemplate(),
        t.chatTemplateKwargs(),
        t.returnTokenStrs());
  }

  TokenizeReply tokenize(
      List<Map<String, Object>> messages,
      String prompt,
      List<Map<String, Object>> tools,
      boolean addGenerationPrompt,
      boolean continueFinalMessage,
      boolean addSpecialTokens,
      String chatTemplate,
      Map<String, Object> chatTemplateKwargs,
      boolean returnTokenStrs) {
    try {
      String text =
          prompt != null
              ? prompt
              : prompts.render(
                  messages,
                  tools,
                  null,
                  addGenerationPrompt,
                  continueFinalMessage,
                  chatTemplate,
                  chatTemplateKwargs,
                  null);
      int[] ids = tokenizer.encode(text, addSpecialTokens);
      List<String> strs = null;
      if (returnTokenStrs) {
        strs = new ArrayList<>(ids.length);
        for (int id : ids) strs.add(tokenizer.idToToken(id));
      }
      return new Tokenized(boxed(ids), strs, maxModelLen);
    } catch (RequestRejected e) {
      return new Rejected(e.kind, e.getMessage(), e.param);
    }
  }

  /** vLLM's {@code /detokenize}. */
  public DetokenizeReply detokenize(List<Integer> tokens) {
    int[] ids = new int[tokens.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = tokens.get(i);
      if (ids[i] < 0 || ids[i] >= tokenizer.vocabSize())
        return new Rejected(
            ErrorKind.BAD_REQUEST, "Token id " + ids[i] + " is out of vocabulary", "tokens");
    }
    return new Detokenized(tokenizer.decode(ids, true, true));
  }

  @Override
  public void close() {
    runner.close();
  }

  private static List<Integer> boxed(int[] ids) {
    List<Integer> out = new ArrayList<>(ids.length);
    for (int id : ids) out.add(id);
    return out;
  }

  /** A request in flight. */
  private static final class Active {
    final GenerationRequest request;
    final SamplingParams params;
    final int[] prompt;
    final SequenceGroup group;
    final Choice[] choices;
    final List<LogprobEntry> promptLogprobs;

    /** The LoRA adapter every chunk of this request runs with (0 = base) and its version. */
    final int adapterId;

    final long version;
    boolean started;
    int completionTokens;

    /** Beam search only: the search, its live beams' sequences and their pending logits. */
    BeamSearch beam;

    List<Sequence> beamSeqs = List.of();
    final Map<Sequence, float[]> beamRows = new java.util.HashMap<>();
    int nextBeamIndex = 1;

    Active(
        GenerationRequest request,
        SamplingParams params,
        int[] prompt,
        SequenceGroup group,
        Choice[] choices,
        int adapterId,
        long version) {
      this.request = request;
      this.adapterId = adapterId;
      this.version = version;
      this.params = params;
      this.prompt = prompt;
      this.group = group;
      this.choices = choices;
      if (params.promptLogprobs() != null) {
        promptLogprobs = new ArrayList<>(prompt.length);
        promptLogprobs.add(null); // vLLM: nothing predicts the first prompt token
      } else {
        promptLogprobs = null;
      }
    }

    String id() {
      return request.requestId();
    }

    boolean allFinished() {
      for (Choice c : choices) if (!c.finished) return false;
      return true;
    }
  }

  /** One choice's sampling and stopping state. */
  private static final class Choice {
    final dev.troupe.engine.sampling.Sampler sampler;
    final StopChecker stop;
    boolean finished;

    Choice(dev.troupe.engine.sampling.Sampler sampler, StopChecker stop) {
      this.sampler = sampler;
      this.stop = stop;
    }
  }
}
