package dev.troupe.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.NotFoundException;
import com.openai.errors.OpenAIServiceException;
import com.openai.errors.UnauthorizedException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The real server, called with the official OpenAI Java SDK: completions, streams, errors, and the
 * vLLM controls the SDK can express (the rest as additional body properties, i.e. raw JSON).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OpenAiSdkE2eTest {
  private ChatServer server;
  private OpenAIClient client;

  @BeforeAll
  void start() throws Exception {
    server = ChatServer.start();
    client = client(ChatServer.KEY);
  }

  @AfterAll
  void stop() throws Exception {
    if (server != null) server.close();
  }

  private OpenAIClient client(String key) {
    return OpenAIOkHttpClient.builder()
        .apiKey(key)
        .baseUrl(server.baseUrl() + "/v1")
        .maxRetries(0)
        .build();
  }

  private ChatCompletionCreateParams.Builder chat(String prompt) {
    return ChatCompletionCreateParams.builder().model(ChatServer.MODEL).addUserMessage(prompt);
  }

  private static String content(ChatCompletion c, int choice) {
    return c.choices().get(choice).message().content().orElse("");
  }

  @SuppressWarnings("unchecked")
  private static List<Integer> tokenIds(ChatCompletion.Choice choice) {
    JsonValue ids = choice._additionalProperties().get("token_ids");
    List<Object> raw = ids.convert(List.class);
    List<Integer> out = new ArrayList<>();
    for (Object o : raw) out.add(((Number) o).intValue());
    return out;
  }

  @Test
  void aCompletion() {
    ChatCompletion c =
        client
            .chat()
            .completions()
            .create(chat("Hello there").maxCompletionTokens(6).temperature(0.0).build());
    assertTrue(c.id().startsWith("chatcmpl-"), c.id());
    assertEquals(ChatServer.MODEL, c.model());
    assertEquals(1, c.choices().size());
    ChatCompletion.Choice choice = c.choices().get(0);
    assertEquals("assistant", choice.message()._role().convert(String.class));
    long completion = c.usage().get().completionTokens();
    assertTrue(completion >= 1 && completion <= 6, "completion tokens " + completion);
    assertEquals(c.usage().get().promptTokens() + completion, c.usage().get().totalTokens());
    String finish = choice.finishReason().asString();
    assertTrue(
        finish.equals("length") ? completion == 6 : finish.equals("stop"),
        finish + " after " + completion);
  }

  @Test
  void aStreamMatchesTheCompletionAtTemperatureZero() {
    ChatCompletionCreateParams whole =
        chat("Tell me a story").maxCompletionTokens(8).temperature(0.0).build();
    String expected = content(client.chat().completions().create(whole), 0);
    ChatCompletionCreateParams streamed =
        chat("Tell me a story")
            .maxCompletionTokens(8)
            .temperature(0.0)
            .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build())
            .build();
    StringBuilder text = new StringBuilder();
    int finishes = 0;
    List<ChatCompletionChunk> chunks = new ArrayList<>();
    try (StreamResponse<ChatCompletionChunk> stream =
        client.chat().completions().createStreaming(streamed)) {
      stream.stream().forEach(chunks::add);
    }
    for (ChatCompletionChunk chunk : chunks) {
      for (ChatCompletionChunk.Choice choice : chunk.choices()) {
        choice.delta().content().ifPresent(text::append);
        if (choice.finishReason().isPresent()) finishes++;
      }
    }
    assertEquals(expected, text.toString());
    assertEquals(1, finishes);
    assertEquals("assistant", chunks.get(0).choices().get(0).delta().role().get().asString());
    ChatCompletionChunk last = chunks.get(chunks.size() - 1);
    assertTrue(last.choices().isEmpty(), "the usage chunk has no choices");
    assertTrue(last.usage().get().completionTokens() >= 1);
  }

  @Test
  void aWrongKeyIs401() {
    UnauthorizedException e =
        assertThrows(
            UnauthorizedException.class,
            () -> client("wrong-key").chat().completions().create(chat("x").build()));
    assertEquals(401, e.statusCode());
  }

  @Test
  void anUnknownModelIs404() {
    NotFoundException e =
        assertThrows(
            NotFoundException.class,
            () -> client.chat().completions().create(chat("x").model("no-such-model").build()));
    assertEquals(404, e.statusCode());
    assertEquals("model", e.param().orElse(null));
  }

  @Test
  void badParametersAre400NamingTheParameter() {
    assertEquals("temperature", badRequest(chat("x").temperature(-1.0)).param().orElse(null));
    assertEquals("n", badRequest(chat("x").n(2).temperature(0.0)).param().orElse(null));
    assertEquals(
        "top_logprobs", badRequest(chat("x").logprobs(true).topLogprobs(25)).param().orElse(null));
    assertEquals("top_logprobs", badRequest(chat("x").topLogprobs(2)).param().orElse(null));
    assertEquals(
        "stream_options",
        badRequest(
                chat("x")
                    .streamOptions(
                        ChatCompletionStreamOptions.builder().includeUsage(true).build()))
            .param()
            .orElse(null));
    assertEquals(
        "max_completion_tokens",
        badRequest(chat("x").maxCompletionTokens(-3)).param().orElse(null));
    assertEquals(
        "tool_choice",
        badRequest(chat("x").putAdditionalBodyProperty("tool_choice", JsonValue.from("auto")))
            .param()
            .orElse(null));
    assertEquals(
        "reasoning_effort",
        badRequest(
                chat("x").putAdditionalBodyProperty("reasoning_effort", JsonValue.from("extreme")))
            .param()
            .orElse(null));
    assertEquals(
        "continue_final_message",
        badRequest(
                chat("x").putAdditionalBodyProperty("continue_final_message", JsonValue.from(true)))
            .param()
            .orElse(null));
    assertEquals(
        "truncate_prompt_tokens",
        badRequest(
                chat("x").putAdditionalBodyProperty("truncate_prompt_tokens", JsonValue.from(-2)))
            .param()
            .orElse(null));
    assertEquals(
        "seed",
        badRequest(
                chat("x")
                    .putAdditionalBodyProperty(
                        "seed", JsonValue.from(new java.math.BigInteger("9223372036854775808"))))
            .param()
            .orElse(null));
    BadRequestException priority =
        badRequest(chat("x").putAdditionalBodyProperty("priority", JsonValue.from(1)));
    assertEquals("priority", priority.param().orElse(null));
    assertTrue(
        String.valueOf(priority.body()).contains("does not use priority scheduling"),
        String.valueOf(priority.body()));
  }

  @Test
  void aStreamThatIsInvalidFailsBeforeItOpens() {
    OpenAIServiceException e =
        assertThrows(
            BadRequestException.class,
            () -> {
              try (var s =
                  client
                      .chat()
                      .completions()
                      .createStreaming(
                          chat("x")
                              .putAdditionalBodyProperty("prompt_logprobs", JsonValue.from(1))
                              .build())) {
                s.stream().count();
              }
            });
    assertEquals("prompt_logprobs", e.param().orElse(null));
  }

  @Test
  void aPromptLongerThanTheContextIs400() {
    // The demo engine here has 64 blocks of 16 tokens: a 2,000-word prompt cannot fit.
    BadRequestException e = badRequest(chat("hello ".repeat(2000)).maxCompletionTokens(4));
    assertTrue(e.statusCode() == 400, String.valueOf(e.body()));
  }

  private BadRequestException badRequest(ChatCompletionCreateParams.Builder params) {
    return assertThrows(
        BadRequestException.class, () -> client.chat().completions().create(params.build()));
  }

  // ------------------------------------------------------------------ issue 5 controls

  @Test
  @SuppressWarnings("deprecation") // OpenAI deprecated seed; vLLM (and Troupe) honour it
  void sameSeedSameTextAndNChoices() {
    ChatCompletionCreateParams p =
        chat("Once upon a time").temperature(1.0).seed(1234L).n(2).maxCompletionTokens(8).build();
    ChatCompletion a = client.chat().completions().create(p);
    ChatCompletion b = client.chat().completions().create(p);
    assertEquals(2, a.choices().size());
    assertEquals(content(a, 0), content(b, 0));
    assertEquals(content(a, 1), content(b, 1));
    assertEquals(1, a.choices().get(1).index());
  }

  @Test
  void logprobsWithTopAlternatives() {
    ChatCompletion c =
        client
            .chat()
            .completions()
            .create(
                chat("Hi")
                    .logprobs(true)
                    .topLogprobs(3)
                    .maxCompletionTokens(4)
                    .temperature(0.0)
                    .build());
    var content = c.choices().get(0).logprobs().get().content().get();
    assertEquals(
        c.usage().get().completionTokens(), content.size(), "one entry per generated token");
    for (var t : content) {
      assertEquals(3, t.topLogprobs().size());
      assertEquals(t.token(), t.topLogprobs().get(0).token(), "the sampled token comes first");
      assertTrue(t.logprob() <= 0 && t.logprob() >= -9999);
    }
  }

  @Test
  void logitBiasForcesAToken() {
    // +100 on one id at temperature 0: every generated token is that id (the bias beats any logit).
    ChatCompletion c =
        client
            .chat()
            .completions()
            .create(
                chat("Hi")
                    .temperature(0.0)
                    .maxCompletionTokens(3)
                    .logitBias(
                        ChatCompletionCreateParams.LogitBias.builder()
                            .putAdditionalProperty("1000", JsonValue.from(100))
                            .build())
                    .putAdditionalBodyProperty("return_token_ids", JsonValue.from(true))
                    .build());
    assertEquals(List.of(1000, 1000, 1000), tokenIds(c.choices().get(0)));
  }

  @Test
  void penaltiesChangeARepetitiveGreedyAnswer() {
    ChatCompletionCreateParams.Builder base =
        chat("Repeat after me")
            .temperature(0.0)
            .maxCompletionTokens(6)
            .putAdditionalBodyProperty("ignore_eos", JsonValue.from(true))
            .putAdditionalBodyProperty("return_token_ids", JsonValue.from(true));
    List<Integer> plain =
        tokenIds(client.chat().completions().create(base.build()).choices().get(0));
    List<Integer> penalized =
        tokenIds(
            client
                .chat()
                .completions()
                .create(
                    base.frequencyPenalty(2.0)
                        .presencePenalty(2.0)
                        .putAdditionalBodyProperty("repetition_penalty", JsonValue.from(5.0))
                        .build())
                .choices()
                .get(0));
    assertEquals(6, penalized.size());
    assertNotEquals(plain, penalized, "penalties over repeated tokens change the greedy choice");
    long distinctPlain = plain.stream().distinct().count();
    long distinctPenalized = penalized.stream().distinct().count();
    assertTrue(distinctPenalized >= distinctPlain, plain + " vs " + penalized);
  }

  @Test
  void maxCompletionTokensEndsWithLength() {
    ChatCompletion c =
        client
            .chat()
            .completions()
            .create(
                chat("Count")
                    .maxCompletionTokens(2)
                    .temperature(0.0)
                    .putAdditionalBodyProperty("ignore_eos", JsonValue.from(true))
                    .build());
    assertEquals("length", c.choices().get(0).finishReason().asString());
    assertEquals(2, c.usage().get().completionTokens());
  }

  @Test
  void returnTokenIdsAndEchoAsRawJson() {
    ChatCompletion c =
        client
            .chat()
            .completions()
            .create(
                chat("Hi")
                    .maxCompletionTokens(3)
                    .temperature(0.0)
                    .putAdditionalBodyProperty("return_token_ids", JsonValue.from(true))
                    .build());
    @SuppressWarnings("unchecked")
    List<Object> prompt = c._additionalProperties().get("prompt_token_ids").convert(List.class);
    assertEquals(c.usage().get().promptTokens(), prompt.size());
    assertEquals(c.usage().get().completionTokens(), tokenIds(c.choices().get(0)).size());

    ChatCompletion echoed =
        client
            .chat()
            .completions()
            .create(
                ChatCompletionCreateParams.builder()
                    .model(ChatServer.MODEL)
                    .addUserMessage("Hi")
                    .addAssistantMessage("The answer is")
                    .maxCompletionTokens(2)
                    .temperature(0.0)
                    .putAdditionalBodyProperty("echo", JsonValue.from(true))
                    .putAdditionalBodyProperty("add_generation_prompt", JsonValue.from(false))
                    .putAdditionalBodyProperty("continue_final_message", JsonValue.from(true))
                    .build());
    assertTrue(content(echoed, 0).startsWith("The answer is"), content(echoed, 0));
    assertTrue(
        echoed._additionalProperties().get("prompt_logprobs").convert(List.class) != null,
        "echo asks for prompt logprobs");
  }

  @Test
  void stopStringsCutTheText() {
    ChatCompletionCreateParams free =
        chat("Write")
            .maxCompletionTokens(8)
            .temperature(0.0)
            .putAdditionalBodyProperty("ignore_eos", JsonValue.from(true))
            .build();
    String text = content(client.chat().completions().create(free), 0);
    assertTrue(text.length() >= 3, "8 tokens past EOS give some text: " + text);
    String stop = text.substring(1, 3);
    ChatCompletion cut =
        client
            .chat()
            .completions()
            .create(
                chat("Write")
                    .maxCompletionTokens(8)
                    .temperature(0.0)
                    .stop(stop)
                    .putAdditionalBodyProperty("ignore_eos", JsonValue.from(true))
                    .build());
    assertEquals("stop", cut.choices().get(0).finishReason().asString());
    assertFalse(content(cut, 0).contains(stop), content(cut, 0));
    assertEquals(
        stop,
        cut.choices().get(0)._additionalProperties().get("stop_reason").convert(String.class));
  }

  @Test
  void priorityIsAcceptedByAPriorityModel() {
    ChatCompletion c =
        client
            .chat()
            .completions()
            .create(
                chat("x")
                    .model(ChatServer.PRIORITY_MODEL)
                    .maxCompletionTokens(2)
                    .putAdditionalBodyProperty("priority", JsonValue.from(-3))
                    .build());
    assertEquals(ChatServer.PRIORITY_MODEL, c.model());
  }

  @Test
  void modelsAreListed() {
    var page = client.models().list();
    List<String> ids = page.data().stream().map(m -> m.id()).toList();
    assertEquals(List.of(ChatServer.MODEL, ChatServer.PRIORITY_MODEL), ids);
    Object maxLen =
        page.data().get(0)._additionalProperties().get("max_model_len").convert(Object.class);
    assertNotEquals(null, maxLen);
    assertTrue(((Number) maxLen).intValue() > 0, String.valueOf(maxLen));
  }
}
