# labels: test_group::graph_convolutions name::gin author::xu_hu_leskovec_jegelka task::Graph_Machine_Learning license::mit
"""
Graph Isomorphism Network (Xu, Hu, Leskovec & Jegelka 2019, "How Powerful are Graph Neural
Networks?", https://arxiv.org/abs/1810.00826): each layer computes
h' = MLP((1 + eps) h + sum(h of the neighbours)) with a learned eps and a two-layer MLP with
BatchNorm; --num_layers layers (8 by default) of --out_channels (16) channels on a Cora-sized
graph (2708 nodes, 1433 features, 5278 random undirected edges), then a 7-class linear head.

Written with plain torch (the neighbour sum is a dense adjacency built from the int64 edge list
inside the model), random weights and a random graph.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

in_channels, out_channels, num_layers = parse(["in_channels", "out_channels", "num_layers"])
num_nodes, num_edges, num_classes = 2708, 5278, 7


def adjacency_of(edge_index, num_nodes):
    adjacency = torch.zeros(num_nodes, num_nodes)
    adjacency[edge_index[0], edge_index[1]] = 1.0
    return torch.maximum(adjacency, adjacency.t())


class GINConv(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.eps = torch.nn.Parameter(torch.zeros(1))
        self.linear1 = torch.nn.Linear(in_features, out_features, bias=False)
        self.bias1 = torch.nn.Parameter(torch.zeros(out_features))
        self.rest_of_mlp = torch.nn.Sequential(
            torch.nn.BatchNorm1d(out_features), torch.nn.ReLU(),
            torch.nn.Linear(out_features, out_features))

    def forward(self, x, adjacency):
        # The MLP's first (linear) layer goes before the (linear) aggregation: W((1 + eps) x + A x)
        # = (1 + eps) W x + A (W x), the same function without a dense product at the input width.
        h = self.linear1(x)
        return self.rest_of_mlp((1 + self.eps) * h + adjacency @ h + self.bias1)


class GIN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, num_layers, num_classes):
        super().__init__()
        self.convs = torch.nn.ModuleList(
            GINConv(in_channels if n == 0 else hidden_channels, hidden_channels)
            for n in range(num_layers))
        self.head = torch.nn.Linear(hidden_channels, num_classes)

    def forward(self, x, edge_index):
        adjacency = adjacency_of(edge_index, x.shape[0])
        for conv in self.convs:
            x = torch.relu(conv(x, adjacency))
        return self.head(x)


model = GIN(in_channels, out_channels, num_layers, num_classes)
model.eval()
inputs = {
    "x": torch.rand(num_nodes, in_channels),
    "edge_index": torch.randint(0, num_nodes, (2, num_edges), dtype=torch.int64),
}

with torch.no_grad():
    logits = model(**inputs)
print("node logits:", tuple(logits.shape))
