# labels: test_group::graph_convolutions name::gcn author::kipf_welling task::Graph_Machine_Learning license::mit
"""
Graph Convolutional Network (Kipf & Welling 2017, "Semi-Supervised Classification with Graph
Convolutional Networks", https://arxiv.org/abs/1609.02907): two graph convolutions
H' = D^-1/2 (A + I) D^-1/2 H W with ReLU and dropout between them, on a Cora-sized graph (2708
nodes, 1433 features, 7 classes, 5278 random undirected edges).

Written with plain torch (a dense normalized adjacency built from the int64 edge list inside the
model), random weights and a random graph.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

in_channels, out_channels = parse(["in_channels", "out_channels"])
num_nodes, num_edges, num_classes = 2708, 5278, 7


def normalized_adjacency(edge_index, num_nodes):
    """D^-1/2 (A + I) D^-1/2 of the undirected graph of edge_index (2, E), dense."""
    adjacency = torch.zeros(num_nodes, num_nodes)
    adjacency[edge_index[0], edge_index[1]] = 1.0
    adjacency = torch.maximum(adjacency, adjacency.t()) + torch.eye(num_nodes)
    inverse_sqrt_degree = adjacency.sum(dim=1).pow(-0.5)
    return inverse_sqrt_degree[:, None] * adjacency * inverse_sqrt_degree[None, :]


class GraphConvolution(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features, bias=False)
        self.bias = torch.nn.Parameter(torch.zeros(out_features))

    def forward(self, x, adjacency):
        return adjacency @ self.linear(x) + self.bias


class GCN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, num_classes, dropout=0.5):
        super().__init__()
        self.conv1 = GraphConvolution(in_channels, hidden_channels)
        self.conv2 = GraphConvolution(hidden_channels, num_classes)
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, x, edge_index):
        adjacency = normalized_adjacency(edge_index, x.shape[0])
        x = self.dropout(torch.relu(self.conv1(self.dropout(x), adjacency)))
        return torch.log_softmax(self.conv2(x, adjacency), dim=1)


model = GCN(in_channels, out_channels, num_classes)
model.eval()
inputs = {
    "x": torch.rand(num_nodes, in_channels),
    "edge_index": torch.randint(0, num_nodes, (2, num_edges), dtype=torch.int64),
}

with torch.no_grad():
    log_probabilities = model(**inputs)
print("node log-probabilities:", tuple(log_probabilities.shape))
