package dev.troupe.gateway.replicas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.SamplingParams;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class MessageBoundTest {
  private static final ActorTestKit KIT =
      ActorTestKit.create(
          ConfigFactory.parseString("pekko.remote.artery.advanced.maximum-large-frame-size = 2MiB")
              .withFallback(ConfigFactory.load()));

  @AfterAll
  static void stop() {
    KIT.shutdownTestKit();
  }

  private static GenerationRequest prompt(int chars) {
    return GenerationRequest.prompt("r", "x".repeat(chars), SamplingParams.builder().build());
  }

  @Test
  void aRequestThatFitsTheFrameLessTheHeadroomPasses() {
    GenerationRequest request = prompt(900_000);
    assertSame(request, new MessageBound(KIT.system()).check(request));
  }

  @Test
  void aLargerRequestIsA400NamingTheSetting() {
    ApiException e =
        assertThrows(
            ApiException.class, () -> new MessageBound(KIT.system()).check(prompt(1_100_000)));
    assertEquals(400, e.status());
    assertTrue(e.getMessage().contains("maximum-large-frame-size"), e.getMessage());
    assertTrue(e.getMessage().contains("at most 1048576"), e.getMessage());
  }
}
