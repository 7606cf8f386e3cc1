// elasticrun: the per-node agent. Everything lives in the elastic_launcher library.
#include "launcher/run.h"

int main(int argc, char** argv) { return elastic::ElasticrunMain(argc, argv); }
