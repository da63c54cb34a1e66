package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.training.nd4j.LoraSpec;
import org.junit.jupiter.api.Test;

class TrainingSettingsTest {
  @Test
  void referenceConfHoldsArtDefaults() {
    TrainingSettings s =
        TrainingSettings.fromConfig(
            ConfigFactory.parseString("troupe.persistence.data-dir = /tmp/troupe-data")
                .withFallback(ConfigFactory.load()));
    assertEquals(LoraSpec.DEFAULT.rank(), s.trainer().lora().rank());
    assertEquals(16.0, s.trainer().lora().alpha());
    assertEquals(LoraSpec.ALL_TARGETS, s.trainer().lora().targets());
    assertEquals(AdamW.Hyper.ART, s.trainer().optimizer());
    assertTrue(s.checkpointDir().toString().endsWith("/tmp/troupe-data/checkpoints"));
    assertEquals(2048, s.trainer().maxSequenceLength());
  }
}
