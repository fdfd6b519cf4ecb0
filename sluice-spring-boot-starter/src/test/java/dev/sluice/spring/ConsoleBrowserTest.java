package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spring.app.TestApp;
import dev.sluice.testkit.Browser;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The console under a Spring Boot application's Actuator, in a real browser (the test kit's
 * {@link Browser}): no admin token (Actuator's own security applies), the keys refused most, and
 * a quota set and removed through the page's form, which changes the application's next decision.
 */
class ConsoleBrowserTest {
  private final HttpClient http = HttpClient.newHttpClient();

  private int hello(int port, String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
        + "/api/hello")).header("X-Api-Key", key).build(), HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  @Test
  void theConsoleUnderActuator_showsRefusals_andItsFormSetsAQuota() throws Exception {
    try (Browser browser = Browser.open();
        ConfigurableApplicationContext app = new SpringApplicationBuilder(TestApp.class)
            .web(WebApplicationType.SERVLET).run("--server.port=0",
                "--spring.autoconfigure.exclude="
                    + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
                "--management.endpoints.web.exposure.include=health,sluicequotas,sluiceconsole",
                "--sluice.store.type=memory", "--sluice.console.enabled=true",
                "--sluice.quotas.enabled=true", "--sluice.quotas.write-enabled=true")) {
      int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
      for (int i = 0; i < 10; i++) {
        hello(port, "flood");
      }
      // the console redraws its tables live: a wait looks again at a redrawn element
      WebDriverWait wait = new WebDriverWait(browser.driver, Duration.ofSeconds(20),
          Duration.ofMillis(50));
      wait.ignoring(StaleElementReferenceException.class);
      browser.driver.get("http://127.0.0.1:" + port + "/actuator/sluiceconsole/index.html");
      wait.until(d -> d.findElement(By.id("status")).getText().equals("live"));
      assertThat(browser.driver.findElement(By.id("login")).isDisplayed())
          .as("no admin token: Actuator's security applies").isFalse();
      By top = By.cssSelector("#top .top-list[data-policy='api'] td.key");
      wait.until(d -> !d.findElements(top).isEmpty());
      // read in one script, at one instant of the page (a found element may be redrawn after)
      assertThat(browser.driver.executeScript("return document.querySelector(arguments[0])"
          + ".innerText.trim()", "#top .top-list[data-policy='api'] td.key"))
          .isEqualTo("x-api-key:flood");

      new Select(browser.driver.findElement(By.id("q-policy"))).selectByValue("rate:api");
      type(browser, "q-key", "x-api-key:flood");
      type(browser, "q-capacity", "50");
      type(browser, "q-rate", "50/s");
      type(browser, "q-who", "ops");
      browser.driver.findElement(By.id("q-save")).click();
      wait.until(d -> d.findElement(By.id("quota-message")).getText().startsWith("Saved"));
      assertThat(hello(port, "flood")).as("the quota decides the key").isEqualTo(200);

      By remove = By.cssSelector("#quotas tr[data-key='x-api-key:flood'] .remove");
      wait.until(d -> {   // clicked once: a redrawn row is found again, not clicked twice
        d.findElement(remove).click();
        return true;
      });
      wait.until(d -> d.findElement(By.id("quota-message")).getText().startsWith("Removed"));
      assertThat(hello(port, "flood")).as("back to the policy, which the key spent")
          .isEqualTo(429);
      wait.until(d -> d.findElement(By.id("audit")).getText().contains("(removed)"));
      assertThat(browser.errors()).as("the page's console").isEmpty();
    }
  }

  private static void type(Browser browser, String id, String text) {
    WebElement e = browser.driver.findElement(By.id(id));
    e.clear();
    e.sendKeys(text);
  }
}
