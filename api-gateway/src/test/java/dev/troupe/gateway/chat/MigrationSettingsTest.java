package dev.troupe.gateway.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Every bound of a generation's owner is a commented key of reference.conf, with its own name. */
class MigrationSettingsTest {

  @Test
  void everyTimeoutOfTheOwnerIsInReferenceConf() {
    MigrationSettings s = MigrationSettings.fromConfig(ConfigFactory.load());
    assertEquals(
        new MigrationSettings(
            true,
            3,
            Duration.ofSeconds(60),
            Duration.ofMillis(500),
            Duration.ofSeconds(5),
            Duration.ofSeconds(30)),
        s);
    assertEquals(MigrationSettings.DEFAULT, s, "the code's defaults are the config's");
  }

  @Test
  void theAttemptTimeoutIsItsOwnSettingNotTheAskTimeout() {
    MigrationSettings s =
        MigrationSettings.fromConfig(
            ConfigFactory.parseString(
                    "troupe.gateway.ask-timeout = 2s\n"
                        + "troupe.gateway.migration.attempt-timeout = 45s")
                .withFallback(ConfigFactory.load()));
    assertEquals(Duration.ofSeconds(45), s.attemptTimeout());
    assertEquals(Duration.ofSeconds(5), s.acceptTimeout());
    assertThrows(
        IllegalArgumentException.class,
        () -> MigrationSettings.DEFAULT.withAttemptTimeout(Duration.ZERO));
  }
}
