package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import dev.sluice.spring.app.TestApp;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * Spring WebFlux on Netty, the in-memory store, under BlockHound: a decision that blocked an
 * event loop would fail its request.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=reactive",
    "sluice.store.type=memory", "spring.autoconfigure.exclude="
    + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
class MemoryWebFluxTest extends StarterContract {
  @BeforeAll
  static void blockHound() {
    BlockHoundForTests.install();
  }

  @Test
  void control_blockingOnAnEventLoop_failsTheRequest() throws Exception {
    assertThat(get("/blocking").statusCode()).isEqualTo(500);
  }

  @org.springframework.beans.factory.annotation.Autowired
  TestApp.Reports reports;

  @Test
  void aRateLimitedMethodThatWaits_calledOnAnEventLoop_isRefusedWithTheReason() {
    String user = fresh();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> reactor.core.publisher.Mono
            .fromCallable(() -> reports.waitFor(user))
            .subscribeOn(reactor.core.scheduler.Schedulers.parallel()).block())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("waitFor returns String")
        .hasMessageContaining("wait for room (maxWait) would block");
  }

  @Override
  String expectedStore() {
    return "memory";
  }
}
