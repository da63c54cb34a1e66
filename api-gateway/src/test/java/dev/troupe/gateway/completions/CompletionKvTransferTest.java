package dev.troupe.gateway.completions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.protocol.api.completions.CompletionRequest;
import dev.troupe.protocol.cluster.KvHandle;
import dev.troupe.protocol.cluster.KvTransfer;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.FinishReason;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/** {@code kv_transfer_params} on {@code /v1/completions}: the request's transfer, the reply's. */
class CompletionKvTransferTest {
  private static final ModelFacts MODEL = new ModelFacts("m", 128, false);

  static CompletionPlan map(String json) {
    CompletionRequest r = JsonBodies.parse(ByteString.fromString(json), CompletionRequest.class);
    return CompletionRequestMapper.map(r, MODEL, Optional.empty());
  }

  @Test
  void theRequestCarriesItsTransferAndTheWholeAnswerTheHandle() {
    CompletionPlan plan =
        map(
            "{\"prompt\":\"Hi\",\"max_tokens\":1,\"kv_transfer_params\":{\"do_remote_decode\":true}}");
    assertEquals(new KvTransfer.RemoteDecode(), plan.prompts().get(0).generation().kvTransfer());
    assertNull(map("{\"prompt\":\"Hi\"}").prompts().get(0).generation().kvTransfer());
    KvHandle handle = new KvHandle("m#0@1", List.of(5), "127.0.0.1", 4000, "cmpl-x-0", 1);
    PromptOutput out = new PromptOutput(1);
    out.add(
        new GenerationUpdate(
            "cmpl-x-0",
            null,
            List.of(new ChoiceUpdate(0, "!", List.of(9), null, FinishReason.LENGTH, null)),
            new Usage(2, 1, 0),
            handle));
    var response = CompletionResponses.whole(plan, 0, List.of(out), List.of(new Echo("Hi", null)));
    assertEquals(handle.toParams(), response.kvTransferParams());
  }

  @Test
  void severalPromptsCannotShareOneTransfer() {
    ApiException e =
        assertThrows(
            ApiException.class,
            () ->
                map(
                    "{\"prompt\":[\"a\",\"b\"],\"kv_transfer_params\":{\"do_remote_decode\":true}}"));
    assertEquals("kv_transfer_params", e.param());
  }

  @Test
  void aStreamedPrefillHalfIsRefused() {
    ApiException e =
        assertThrows(
            ApiException.class,
            () ->
                map(
                    "{\"prompt\":\"Hi\",\"stream\":true,"
                        + "\"kv_transfer_params\":{\"do_remote_decode\":true}}"));
    assertEquals("kv_transfer_params.do_remote_decode", e.param());
  }
}
