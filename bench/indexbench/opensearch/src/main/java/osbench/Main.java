package osbench;

import java.util.List;
import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.node.InternalSettingsPreparer;
import java.util.Collections;
import org.opensearch.node.Node;
import org.opensearch.transport.Netty4Plugin;

class EmbeddedNode extends Node {
    EmbeddedNode(Settings s) {
        super(InternalSettingsPreparer.prepareEnvironment(s, Collections.emptyMap(), null, () -> "n1"),
            List.of(Netty4Plugin.class, CommonAnalysisPlugin.class), true);
    }
}

/** Runs one OpenSearch node on loopback until killed. */
public class Main {
    public static void main(String[] args) throws Exception {
        Settings s = Settings.builder()
            .put("path.home", args[0])
            .put("path.data", args[0] + "/data")
            .put("cluster.name", "osbench")
            .put("node.name", "n1")
            .put("network.host", "127.0.0.1")
            .put("http.port", "9250")
            .put("transport.port", "9350")
            .put("discovery.type", "single-node")
            .put("http.type", "netty4")
            .put("transport.type", "netty4")
            .build();
        Node node = new EmbeddedNode(s);
        node.start();
        System.out.println("started");
        Thread.currentThread().join();
    }
}
