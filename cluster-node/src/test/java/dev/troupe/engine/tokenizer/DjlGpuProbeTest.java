package dev.troupe.engine.tokenizer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.util.cuda.CudaUtils;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Loading a tokenizer keeps DJL's GPU probe from loading the CUDA runtime: on a machine with
 * libcudart but no driver it logged "WARN CudaUtils - Failed to detect GPU count" twice at every
 * start, and on a GPU machine it reported GPUs for a library flavour we override anyway.
 */
class DjlGpuProbeTest {
  @Test
  void djlSeesNoGpuAndSaysNothing() {
    TokenizerBundle.demo(); // loads a tokenizer: HfTokenizer and DJL's native library are set up
    Logger probe = (Logger) LoggerFactory.getLogger(CudaUtils.class);
    ListAppender<ILoggingEvent> said = new ListAppender<>();
    said.start();
    probe.addAppender(said);
    try {
      assertEquals(0, CudaUtils.getGpuCount());
      assertEquals(List.of(), said.list.stream().map(ILoggingEvent::getFormattedMessage).toList());
    } finally {
      probe.detachAppender(said);
    }
  }
}
