package dev.troupe.protocol.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.*;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.apache.pekko.serialization.jackson.JacksonCborSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Every worker message round-trips through the configured (CBOR) serializer unchanged. */
class ModelWorkerProtocolSerializationTest {

  private static ActorTestKit testKit;

  @BeforeAll
  static void start() {
    testKit = ActorTestKit.create();
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  private static Object roundTrip(Object message) {
    Serialization serialization = SerializationExtension.get(testKit.system().classicSystem());
    var serializer = serialization.findSerializerFor(message);
    assertEquals(JacksonCborSerializer.class, serializer.getClass(), "bound to jackson-cbor");
    byte[] bytes = serialization.serialize(message).get();
    String manifest = Serializers.manifestFor(serializer, message);
    return serialization.deserialize(bytes, serializer.identifier(), manifest).get();
  }

  private static GenerationRequest request() {
    Map<String, Object> message = new LinkedHashMap<>();
    message.put("role", "user");
    message.put("content", "Hello");
    message.put("name", null);
    Map<String, Object> kwargs = new LinkedHashMap<>();
    kwargs.put("enable_thinking", false);
    kwargs.put("depth", 3);
    kwargs.put("tags", List.of("a", "b"));
    SamplingParams sampling =
        SamplingParams.builder()
            .n(2)
            .temperature(0.7)
            .topP(0.9)
            .topK(40)
            .minP(0.05)
            .presencePenalty(0.1)
            .frequencyPenalty(-0.2)
            .repetitionPenalty(1.1)
            .seed(42L)
            .maxTokens(64)
            .minTokens(2)
            .stop(List.of("\n\n"))
            .stopTokenIds(List.of(7, 9))
            .includeStopStrInOutput(true)
            .logprobs(5)
            .promptLogprobs(1)
            .spacesBetweenSpecialTokens(false)
            .logitBias(Map.of(3, -100.0, 11, 2.5))
            .allowedTokenIds(List.of(1, 2, 3))
            .badWords(List.of("bad"))
            .engineXargs(Map.of("k", "v"))
            .build();
    return GenerationRequest.builder("req-1")
        .messages(List.of(message))
        .documents(List.of(Map.of("title", "t", "text", "x")))
        .addSpecialTokens(true)
        .chatTemplate("{{ messages }}")
        .chatTemplateKwargs(kwargs)
        .reasoningEffort("low")
        .truncatePromptTokens(-1)
        .priority(3)
        .cacheSalt("salt")
        .sampling(sampling)
        .returnTokenIds(true)
        .returnTokensAsTokenIds(true)
        .adapter(new GenerationRequest.Adapter("m-1", 3, "/data/checkpoints/m-1/0003"))
        .build();
  }

  @Test
  void commandsRoundTrip() {
    TestProbe<GenerationEvent> events = testKit.createTestProbe();
    TestProbe<TokenizeReply> tokenized = testKit.createTestProbe();
    TestProbe<DetokenizeReply> detokenized = testKit.createTestProbe();
    TestProbe<WorkerStatus> status = testKit.createTestProbe();
    List<Object> messages =
        List.of(
            new Generate(request(), events.ref()),
            new Generate(request(), events.ref(), true),
            new Generate(
                request()
                    .withResume(
                        new GenerationRequest.Resume(
                            List.of(
                                new GenerationRequest.ResumedChoice(List.of(5, 6, 7), false),
                                new GenerationRequest.ResumedChoice(List.of(8), true)))),
                events.ref()),
            new Generate(request().withKvTransfer(new KvTransfer.RemoteDecode()), events.ref()),
            new Generate(
                request()
                    .withKvTransfer(
                        new KvTransfer.RemotePrefill(
                            "demo#0@1a2b", List.of(4, 5, 6), "10.0.0.7", 25530, "chatcmpl-1", 1)),
                events.ref()),
            new Cancel("req-1"),
            new Tokenize(
                List.of(Map.of("role", "user", "content", "hi")),
                null,
                null,
                true,
                false,
                false,
                null,
                Map.of(),
                true,
                tokenized.ref()),
            new Tokenize(null, "hi", null, false, false, true, null, null, false, tokenized.ref()),
            new Detokenize(List.of(1, 2, 3), detokenized.ref()),
            new GetStatus(status.ref()));
    for (Object message : messages) assertEquals(message, roundTrip(message));
  }

  @Test
  void eventsAndRepliesRoundTrip() {
    TokenLogprob a = new TokenLogprob(5, "Hi", -0.25, 1);
    TokenLogprob b = new TokenLogprob(6, "token_id:6", -9999.0, 2);
    List<LogprobEntry> promptLogprobs =
        new ArrayList<>(Arrays.asList(null, new LogprobEntry(a, List.of(a, b))));
    TestProbe<Command> worker = testKit.createTestProbe();
    Started started = new Started("demo#0", worker.ref(), 3, 2, List.of(1, 2), promptLogprobs);
    List<Object> messages =
        List.of(
            // a first update: the prompt facts, who serves it, every choice's first token
            new GenerationUpdate(
                "r",
                started,
                List.of(
                    new ChoiceUpdate(
                        0,
                        "Hi",
                        List.of(5),
                        List.of(new LogprobEntry(a, List.of(a, b))),
                        null,
                        null),
                    new ChoiceUpdate(1, "", List.of(7), null, null, null)),
                null),
            new GenerationUpdate(
                "r", new Started("demo#0", null, 0, 2, null, null), List.of(), null),
            // a last update: finishes with their stop reasons, and the usage
            new GenerationUpdate(
                "r",
                null,
                List.of(
                    new ChoiceUpdate(0, "", List.of(9), null, FinishReason.STOP, "\n\n"),
                    new ChoiceUpdate(1, "x", List.of(7), null, FinishReason.STOP, 7),
                    // where a reasoning parser's split stands travels too
                    new ChoiceUpdate(
                        3,
                        "",
                        List.of(8),
                        null,
                        FinishReason.STOP,
                        null,
                        "why",
                        List.of(),
                        ModelWorkerProtocol.TextSplit.AFTER_REASONING),
                    new ChoiceUpdate(2, "", List.of(), null, FinishReason.LENGTH, null)),
                new Usage(10, 4, 0)),
            // a remote-decode request's last update: where its prompt's KV blocks wait
            new GenerationUpdate(
                "r",
                null,
                List.of(new ChoiceUpdate(0, "", List.of(9), null, FinishReason.LENGTH, null)),
                new Usage(10, 1, 0),
                new KvHandle("demo#0@1a2b", List.of(0, 1), "10.0.0.7", 25530, "r", 1)),
            new Failed("r", ErrorKind.OVERLOADED, "queue full", null),
            new Accepted("r", "demo#0", worker.ref()),
            new Migrate("r", "demo#0 stopped"),
            new Tokenized(List.of(1, 2), List.of("a", "b"), 2048),
            new Tokenized(List.of(1, 2), null, 2048),
            new Detokenized("hello"),
            new Rejected(ErrorKind.BAD_REQUEST, "bad", "messages"),
            new WorkerStatus("demo#0", "demo", 2048, "fcfs", 1, 2, 0, 10, 100, 0, 7, 9));
    for (Object message : messages) assertEquals(message, roundTrip(message));
    GenerationUpdate back =
        (GenerationUpdate) roundTrip(new GenerationUpdate("r", started, List.of(), null));
    assertNull(back.started().promptLogprobs().get(0), "vLLM's prompt logprobs start with null");
    assertEquals(worker.ref(), back.started().worker(), "the worker's address survives the wire");
    assertThrows(
        IllegalArgumentException.class,
        () -> new ChoiceUpdate(0, "", List.of(), null, null, "stop"),
        "a stop reason needs a finish");
  }

  @Test
  void kvHandleIsVllmsParams() {
    KvHandle handle = new KvHandle("demo#0@1a2b", List.of(3, 4), "10.0.0.7", 25530, "r-1", 1);
    assertEquals(
        List.of(
            "do_remote_prefill",
            "do_remote_decode",
            "remote_engine_id",
            "remote_block_ids",
            "remote_host",
            "remote_port",
            "remote_request_id",
            "tp_size"),
        List.copyOf(handle.toParams().keySet()));
    assertEquals(true, handle.toParams().get("do_remote_prefill"));
    assertEquals(false, handle.toParams().get("do_remote_decode"));
    assertEquals(List.of(3, 4), handle.toParams().get("remote_block_ids"));
    assertEquals(
        new KvTransfer.RemotePrefill("demo#0@1a2b", List.of(3, 4), "10.0.0.7", 25530, "r-1", 1),
        handle.toRemotePrefill());
    assertThrows(
        IllegalArgumentException.class,
        () -> new KvTransfer.RemotePrefill("e", List.of(-1), "h", 1, "r", 1));
    assertThrows(
        IllegalArgumentException.class,
        () -> new KvTransfer.RemotePrefill("e", List.of(1), "h", 0, "r", 1));
    assertThrows(
        IllegalArgumentException.class,
        () -> new GenerationUpdate("r", null, List.of(), null, handle),
        "a handle rides the last update only");
  }

  @Test
  void entityIds() {
    assertEquals("qwen#2", ModelWorkerProtocol.entityId("qwen", 2));
    assertEquals(new ReplicaId("a#b", 0), ModelWorkerProtocol.parseEntityId("a#b#0"));
    assertEquals("ModelWorker", ModelWorkerProtocol.TYPE_KEY.name());
    assertThrows(IllegalArgumentException.class, () -> ModelWorkerProtocol.parseEntityId("demo"));
    assertThrows(IllegalArgumentException.class, () -> ModelWorkerProtocol.parseEntityId("demo#x"));
  }

  @Test
  void requestValidation() {
    SamplingParams sampling = SamplingParams.builder().maxTokens(16).build();
    assertThrows(IllegalArgumentException.class, () -> GenerationRequest.chat("r", null, sampling));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            GenerationRequest.chat("r", List.of(), sampling).toBuilder()
                .addGenerationPrompt(true)
                .continueFinalMessage(true)
                .build());
    assertEquals(
        request(), request().toBuilder().build(), "a builder copy equals its original record");
    assertEquals(
        request().sampling(),
        request().sampling().toBuilder().build(),
        "a builder copy equals its original record");
    assertEquals(5, request().withPriority(5).priority());
  }
}
