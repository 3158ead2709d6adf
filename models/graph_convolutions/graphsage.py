# labels: test_group::graph_convolutions name::graphsage author::hamilton_ying_leskovec task::Graph_Machine_Learning license::mit
"""
GraphSAGE with the mean aggregator (Hamilton, Ying & Leskovec 2017, "Inductive Representation
Learning on Large Graphs", https://arxiv.org/abs/1706.02216): each layer computes
h' = W_self h + W_neighbors mean(h of the neighbours), followed by ReLU (and L2 normalization of
the hidden embeddings); two layers on a Cora-sized graph (2708 nodes, 1433 features, 7 classes,
5278 random undirected edges).

Written with plain torch (the mean over neighbours is a row-normalized dense adjacency built from
the int64 edge list inside the model), random weights and a random graph.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

in_channels, out_channels = parse(["in_channels", "out_channels"])
num_nodes, num_edges, num_classes = 2708, 5278, 7


def mean_adjacency(edge_index, num_nodes):
    """Row-normalized adjacency of the undirected graph of edge_index (2, E): row i averages the
    neighbours of node i (all zeros for an isolated node)."""
    adjacency = torch.zeros(num_nodes, num_nodes)
    adjacency[edge_index[0], edge_index[1]] = 1.0
    adjacency = torch.maximum(adjacency, adjacency.t())
    return adjacency / adjacency.sum(dim=1, keepdim=True).clamp(min=1.0)


class SAGEConv(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.self_linear = torch.nn.Linear(in_features, out_features)
        self.neighbor_linear = torch.nn.Linear(in_features, out_features, bias=False)

    def forward(self, x, mean_adjacency):
        # W (A x) computed as A (W x): the same function, without a dense product at the input
        # width (1433 features).
        return self.self_linear(x) + mean_adjacency @ self.neighbor_linear(x)


class GraphSAGE(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, num_classes, dropout=0.5):
        super().__init__()
        self.conv1 = SAGEConv(in_channels, hidden_channels)
        self.conv2 = SAGEConv(hidden_channels, num_classes)
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, x, edge_index):
        adjacency = mean_adjacency(edge_index, x.shape[0])
        x = torch.nn.functional.normalize(torch.relu(self.conv1(x, adjacency)), dim=1)
        return self.conv2(self.dropout(x), adjacency)


model = GraphSAGE(in_channels, out_channels, num_classes)
model.eval()
inputs = {
    "x": torch.rand(num_nodes, in_channels),
    "edge_index": torch.randint(0, num_nodes, (2, num_edges), dtype=torch.int64),
}

with torch.no_grad():
    logits = model(**inputs)
print("node logits:", tuple(logits.shape))
