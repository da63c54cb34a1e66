package dev.troupe.gateway.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.protocol.api.chat.ChatCompletionRequest;
import dev.troupe.protocol.cluster.SamplingParams;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every bound and incompatible combination of the chat request is a 400 naming the parameter (issue
 * 5, item 8), through the same parse → map path the route takes.
 */
class ChatRequestMapperTest {
  private static final ModelFacts FCFS = new ModelFacts("m", 128, false);
  private static final String MESSAGES = "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]";

  static ChatPlan map(String fields) {
    String json = "{" + MESSAGES + (fields.isEmpty() ? "" : "," + fields) + "}";
    return mapJson(json);
  }

  static ChatPlan mapJson(String json) {
    ChatCompletionRequest r =
        JsonBodies.parse(ByteString.fromString(json), ChatCompletionRequest.class);
    return ChatRequestMapper.map(r, FCFS, Optional.empty());
  }

  static Stream<Arguments> invalid() {
    return Stream.of(
        // stream-related combinations
        Arguments.of(
            "\"stream_options\":{\"include_usage\":true}", "stream_options", "stream=True"),
        Arguments.of(
            "\"stream\":false,\"stream_options\":{\"continuous_usage_stats\":false}",
            "stream_options",
            "stream"),
        Arguments.of(
            "\"stream\":true,\"prompt_logprobs\":1",
            "prompt_logprobs",
            "not available when `stream=True`"),
        Arguments.of("\"stream\":true,\"prompt_logprobs\":-1", "prompt_logprobs", "stream"),
        Arguments.of("\"prompt_logprobs\":-2", "prompt_logprobs", "positive value or -1"),
        Arguments.of("\"prompt_logprobs\":21", "prompt_logprobs", "max allowed: 20"),
        Arguments.of("\"prompt_logprobs\":-1", "prompt_logprobs", "max allowed: 20"),
        // logprobs
        Arguments.of("\"top_logprobs\":3", "top_logprobs", "`logprobs` must be set to true"),
        Arguments.of(
            "\"logprobs\":true,\"top_logprobs\":21",
            "top_logprobs",
            "greater than max allowed: 20"),
        Arguments.of("\"logprobs\":true,\"top_logprobs\":-1", "top_logprobs", "max allowed"),
        Arguments.of(
            "\"logprobs\":true,\"top_logprobs\":-2", "top_logprobs", "positive value or -1"),
        // n
        Arguments.of(
            "\"n\":2,\"temperature\":0", "n", "n must be 1 when using greedy sampling, got 2"),
        Arguments.of("\"n\":0", "n", "at least 1"),
        Arguments.of("\"n\":16385", "n", "at most 16384"),
        // seed: signed 64-bit
        Arguments.of("\"seed\":9223372036854775808", "seed", "less_than_equal"),
        Arguments.of("\"seed\":-9223372036854775809", "seed", "greater_than_equal"),
        // token counts
        Arguments.of("\"max_tokens\":-1", "max_tokens", "at least 1"),
        Arguments.of("\"max_tokens\":0", "max_tokens", "at least 1"),
        Arguments.of("\"max_completion_tokens\":-5", "max_completion_tokens", "at least 1"),
        Arguments.of("\"min_tokens\":-1", "min_tokens", "greater than or equal to 0"),
        Arguments.of(
            "\"max_tokens\":5,\"min_tokens\":10",
            "min_tokens",
            "less than or equal to max_tokens=5"),
        Arguments.of(
            "\"truncate_prompt_tokens\":-2", "truncate_prompt_tokens", "greater_than_equal"),
        // sampling bounds
        Arguments.of("\"temperature\":-0.5", "temperature", "non-negative"),
        Arguments.of("\"top_p\":0", "top_p", "(0, 1]"),
        Arguments.of("\"top_p\":1.5", "top_p", "(0, 1]"),
        Arguments.of("\"top_k\":-2", "top_k", "0 (disable), or at least 1"),
        Arguments.of("\"min_p\":1.5", "min_p", "[0, 1]"),
        Arguments.of("\"presence_penalty\":3", "presence_penalty", "[-2, 2]"),
        Arguments.of("\"frequency_penalty\":-2.5", "frequency_penalty", "[-2, 2]"),
        Arguments.of("\"repetition_penalty\":0", "repetition_penalty", "greater than zero"),
        // tools
        Arguments.of("\"tool_choice\":\"auto\"", "tool_choice", "`tools` must be set"),
        Arguments.of("\"tool_choice\":\"required\"", "tool_choice", "`tools` must be set"),
        Arguments.of(
            "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}",
            "tool_choice",
            "`tools` must be set"),
        Arguments.of(
            "\"tools\":" + TOOLS + ",\"tool_choice\":\"auto\"",
            "tool_choice",
            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser"),
        Arguments.of(
            "\"tools\":[],\"tool_choice\":\"required\"", "tools", "must not be an empty array"),
        Arguments.of(
            "\"tools\":" + TOOLS + ",\"tool_choice\":\"any\"", "tool_choice", "Only named tools"),
        Arguments.of(
            "\"tools\":"
                + TOOLS
                + ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}",
            "tool_choice",
            "does not match any of the specified `tools`"),
        Arguments.of(
            "\"tools\":" + TOOLS + ",\"tool_choice\":{\"type\":\"function\"}",
            "tool_choice.function",
            "Invalid value for `function`"),
        Arguments.of(
            "\"tools\":"
                + TOOLS
                + ",\"tool_choice\":\"required\",\"structured_outputs\":{\"regex\":\"a\"}",
            "tool_choice",
            "either use constraints for structured outputs or tools"),
        Arguments.of(
            "\"response_format\":{\"type\":\"json_object\"},\"structured_outputs\":{\"regex\":\"a\"}",
            "response_format",
            "only use one kind"),
        Arguments.of(
            "\"n\":2,\"temperature\":0,\"use_beam_search\":true,\"structured_outputs\":{\"choice\":[\"a\"]}",
            "use_beam_search",
            "not supported with beam search"),
        Arguments.of("\"tools\":[{\"type\":\"retrieval\"}]", "tools[0].type", "'function'"),
        Arguments.of(
            "\"tools\":[{\"type\":\"function\",\"function\":{}}]",
            "tools[0].function.name",
            "required"),
        // prompt controls
        Arguments.of(
            "\"continue_final_message\":true", "continue_final_message", "Cannot set both"),
        Arguments.of(
            "\"continue_final_message\":true,\"add_generation_prompt\":true",
            "continue_final_message",
            "both"),
        Arguments.of(
            "\"reasoning_effort\":\"extreme\"", "reasoning_effort", "'low', 'medium' or 'high'"),
        Arguments.of(
            "\"chat_template_kwargs\":{\"tokenize\":true}",
            "chat_template_kwargs",
            "unexpected chat template kwargs"),
        // response format and structured outputs
        Arguments.of(
            "\"response_format\":{\"type\":\"xml\"}",
            "response_format.type",
            "'text', 'json_object'"),
        Arguments.of("\"response_format\":{}", "response_format.type", "required"),
        Arguments.of(
            "\"response_format\":{\"type\":\"json_schema\"}",
            "response_format.json_schema",
            "must be provided"),
        Arguments.of(
            "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{}}}",
            "response_format.json_schema.name",
            "required"),
        Arguments.of(
            "\"structured_outputs\":{\"regex\":\"a+\",\"choice\":[\"a\"]}",
            "structured_outputs",
            "one kind"),
        Arguments.of(
            "\"structured_outputs\":{\"choice\":[]}", "structured_outputs.choice", "empty list"),
        Arguments.of(
            "\"structured_outputs\":{\"grammar\":\"\"}",
            "structured_outputs.grammar",
            "empty string"),
        Arguments.of(
            "\"structured_outputs\":{\"json\":\"{not json\"}",
            "structured_outputs.json",
            "Invalid JSON grammar"),
        // carried-through fields
        Arguments.of("\"cache_salt\":\"\"", "cache_salt", "non-empty string"),
        Arguments.of("\"cache_salt\":5", "cache_salt", "non-empty string"),
        Arguments.of(
            "\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_engine_id\":\"e1\"}",
            "kv_transfer_params.remote_block_ids",
            "required"),
        Arguments.of(
            "\"stream\":true,\"kv_transfer_params\":{\"do_remote_decode\":true}",
            "kv_transfer_params.do_remote_decode",
            "stream: false"),
        Arguments.of(
            "\"kv_transfer_params\":{\"do_remote_decode\":1,\"do_remote_prefill\":true}",
            "kv_transfer_params.do_remote_prefill",
            "cannot both"),
        Arguments.of(
            "\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_engine_id\":\"e\","
                + "\"remote_block_ids\":[1,-2],\"remote_host\":\"h\",\"remote_port\":5,"
                + "\"remote_request_id\":\"r\"}",
            "kv_transfer_params.remote_block_ids[1]",
            "non-negative integer"),
        Arguments.of(
            "\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_engine_id\":\"e\","
                + "\"remote_block_ids\":[1],\"remote_host\":\"h\",\"remote_port\":70000,"
                + "\"remote_request_id\":\"r\"}",
            "kv_transfer_params.remote_port",
            "port number"),
        Arguments.of(
            "\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_engine_id\":\"e\","
                + "\"remote_block_ids\":[1],\"remote_host\":\"h\",\"remote_port\":5}",
            "kv_transfer_params.remote_request_id",
            "required"),
        Arguments.of(
            "\"mm_processor_kwargs\":{\"num_crops\":4}", "mm_processor_kwargs", "text-only"),
        Arguments.of("\"logits_processors\":[5]", "logits_processors[0]", "qualified name"),
        Arguments.of(
            "\"logits_processors\":[{\"args\":[]}]", "logits_processors[0].qualname", "required"),
        Arguments.of(
            "\"logits_processors\":[{\"qualname\":\"a.B\",\"args\":3}]",
            "logits_processors[0].args",
            "array"),
        Arguments.of("\"engine_xargs\":{\"a\":{\"b\":1}}", "engine_xargs.a", "strings, numbers"),
        // token lists
        Arguments.of("\"stop\":[\"\"]", "stop[0]", "empty"),
        Arguments.of("\"stop\":5", "stop", "string or a list"),
        Arguments.of("\"stop\":[\"a\",1]", "stop[1]", "string or a list"),
        Arguments.of("\"stop_token_ids\":[-1]", "stop_token_ids[0]", "non-negative"),
        Arguments.of("\"allowed_token_ids\":[]", "allowed_token_ids", "empty"),
        Arguments.of("\"bad_words\":[\"\"]", "bad_words[0]", "empty"),
        Arguments.of("\"logit_bias\":{\"abc\":1}", "logit_bias", "abc"),
        // wrong JSON types, caught by the parser with the field's path
        Arguments.of("\"temperature\":\"hot\"", "temperature", "a number"),
        Arguments.of("\"n\":1.5", "n", "an integer"),
        Arguments.of("\"stream\":[true]", "stream", "a boolean"),
        Arguments.of(
            "\"stream_options\":{\"include_usage\":{}}",
            "stream_options.include_usage",
            "a boolean"),
        Arguments.of("\"logit_bias\":{\"5\":\"x\"}", "logit_bias.5", "a number"),
        Arguments.of("\"stop_token_ids\":[1,\"x\"]", "stop_token_ids[1]", "an integer"),
        Arguments.of("\"seed\":\"abc\"", "seed", "an integer"));
  }

  @ParameterizedTest(name = "{1}: {0}")
  @MethodSource("invalid")
  void invalidRequestsAre400NamingTheParam(String fields, String param, String messagePart) {
    ApiException e = assertThrows(ApiException.class, () -> map(fields));
    assertEquals(400, e.status(), e.toString());
    assertEquals(param, e.param(), e.toString());
    assertTrue(
        e.getMessage().contains(messagePart),
        () -> "'" + e.getMessage() + "' lacks '" + messagePart + "'");
  }

  static final String TOOLS =
      "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}]";

  static Stream<Arguments> invalidMessages() {
    return Stream.of(
        Arguments.of("{}", "messages"),
        Arguments.of("{\"messages\":[]}", "messages"),
        Arguments.of("{\"messages\":\"hello\"}", "messages"),
        Arguments.of("{\"messages\":[{\"content\":\"x\"}]}", "messages[0].role"),
        Arguments.of("{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[0].content"),
        Arguments.of(
            "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]}]}",
            "messages[0].content[0].type"),
        Arguments.of(
            "{\"messages\":[{\"role\":\"user\",\"content\":[\"text\"]}]}",
            "messages[0].content[0]"));
  }

  @ParameterizedTest(name = "{1}: {0}")
  @MethodSource("invalidMessages")
  void invalidMessagesAre400(String json, String param) {
    ApiException e = assertThrows(ApiException.class, () -> mapJson(json));
    assertEquals(400, e.status());
    assertEquals(param, e.param(), e.toString());
  }

  @Test
  void acceptedEdgeCasesFollowVllm() {
    map("\"top_logprobs\":0"); // 0 without logprobs is fine
    map("\"stream_options\":{}"); // an empty (falsy) stream_options without stream is fine
    map("\"stream_options\":null");
    assertEquals(
        3.5, map("\"temperature\":3.5").generation().sampling().temperature(), "v0.11 accepts > 2");
    assertEquals(
        2, map("\"n\":2,\"temperature\":0,\"use_beam_search\":true").generation().sampling().n());
    assertNull(map("\"seed\":-1").generation().sampling().seed(), "-1 means unseeded");
    assertEquals(
        Long.MAX_VALUE, map("\"seed\":9223372036854775807").generation().sampling().seed());
    assertEquals(
        Long.MIN_VALUE, map("\"seed\":-9223372036854775808").generation().sampling().seed());
    assertEquals(-1, map("\"truncate_prompt_tokens\":-1").generation().truncatePromptTokens());
    map("\"continue_final_message\":true,\"add_generation_prompt\":false");
    map(
        "\"tool_choice\":\"none\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]");
    map("\"tool_choice\":null");
    map("\"mm_processor_kwargs\":{}");
    map(
        "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{}}}");
    map("\"logprobs\":\"true\",\"top_logprobs\":20"); // pydantic-style lax boolean
    map("\"unknown_field\":{\"nested\":[1]}"); // unknown fields are ignored
    mapJson(
        "{\"messages\":[{\"role\":\"my-custom-role\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"extra\":1}]}");
  }

  @Test
  void kvTransferParamsBecomeTheRequestsKvTransfer() {
    assertNull(map("").generation().kvTransfer(), "absent: served whole");
    assertNull(
        map("\"kv_transfer_params\":{\"do_remote_decode\":false,\"remote_engine_id\":null}")
            .generation()
            .kvTransfer(),
        "neither flag set: served whole, as today");
    // vLLM's toy proxy, prefill half: do_remote_decode with the remote_* fields null
    assertEquals(
        new dev.troupe.protocol.cluster.KvTransfer.RemoteDecode(),
        map("\"kv_transfer_params\":{\"do_remote_decode\":true,\"do_remote_prefill\":false,"
                + "\"remote_engine_id\":null,\"remote_block_ids\":null,\"remote_host\":null,"
                + "\"remote_port\":null}")
            .generation()
            .kvTransfer());
    // decode half: what the prefill response returned, copied as is (tp_size defaults to 1)
    assertEquals(
        new dev.troupe.protocol.cluster.KvTransfer.RemotePrefill(
            "demo#0@ab12", List.of(3, 4), "10.0.0.7", 25530, "chatcmpl-x", 1),
        map("\"kv_transfer_params\":{\"do_remote_prefill\":true,\"do_remote_decode\":false,"
                + "\"remote_engine_id\":\"demo#0@ab12\",\"remote_block_ids\":[3,4],"
                + "\"remote_host\":\"10.0.0.7\",\"remote_port\":25530,"
                + "\"remote_request_id\":\"chatcmpl-x\"}")
            .generation()
            .kvTransfer());
  }

  @Test
  void theNonStreamingAnswerCarriesTheHandleAsKvTransferParams() {
    ChatPlan plan = map("\"max_tokens\":1,\"kv_transfer_params\":{\"do_remote_decode\":true}");
    var handle =
        new dev.troupe.protocol.cluster.KvHandle(
            "m#0@1", List.of(5, 6), "127.0.0.1", 4000, "chatcmpl-x", 1);
    var last =
        new dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate(
            "chatcmpl-x",
            null,
            List.of(
                new dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate(
                    0,
                    "!",
                    List.of(9),
                    null,
                    dev.troupe.protocol.cluster.ModelWorkerProtocol.FinishReason.LENGTH,
                    null)),
            new dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage(20, 1, 0),
            handle);
    assertEquals(
        handle.toParams(), new ChatResponseFolder(plan, 0).add(last).response().kvTransferParams());
  }

  @Test
  void streamUsageFlagsFollowV011Defaults() {
    ChatPlan none = map("\"stream\":true");
    assertTrue(!none.includeUsage() && !none.continuousUsage());
    ChatPlan implicit = map("\"stream\":true,\"stream_options\":{\"continuous_usage_stats\":true}");
    assertTrue(
        implicit.includeUsage() && implicit.continuousUsage(),
        "include_usage defaults to true once sent");
    ChatPlan off =
        map(
            "\"stream\":true,\"stream_options\":{\"include_usage\":false,\"continuous_usage_stats\":true}");
    assertTrue(!off.includeUsage() && !off.continuousUsage());
  }

  @Test
  void ruleThatNeedTheModelAreLeftToTheWorker() {
    // priority vs policy, max_tokens vs the context, truncation vs the context: the worker's rules
    ChatPlan plan = map("\"priority\":-5,\"max_tokens\":500,\"truncate_prompt_tokens\":129");
    assertEquals(-5, plan.generation().priority());
    assertEquals(500, plan.generation().sampling().maxTokens());
    assertEquals(129, plan.generation().truncatePromptTokens());
    // absent sampling fields wait for the model's generation-config defaults
    SamplingParams s = map("").generation().sampling();
    assertNull(s.temperature());
    assertNull(s.topP());
    assertNull(s.topK());
    assertNull(s.minP());
    assertNull(s.repetitionPenalty());
    assertNull(s.presencePenalty());
    assertNull(s.frequencyPenalty());
    assertEquals(
        s,
        map("\"temperature\":null,\"top_p\":null,\"top_k\":null,\"min_p\":null,"
                + "\"repetition_penalty\":null,\"presence_penalty\":null,\"frequency_penalty\":null")
            .generation()
            .sampling(),
        "explicit null is absent, as in vLLM");
  }
}
