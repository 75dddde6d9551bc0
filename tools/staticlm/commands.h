// The subcommands of the staticlm tool. Each returns the process exit status.
#pragma once

namespace staticlm::cli {

int RunCommand(int argc, char** argv);
int ChatCommand(int argc, char** argv);
int InspectCommand(int argc, char** argv);
int BenchCommand(int argc, char** argv);
int PlanCommand(int argc, char** argv);
int BatchCommand(int argc, char** argv);
int SoakCommand(int argc, char** argv);
int TokenizeCommand(int argc, char** argv);
int DetokenizeCommand(int argc, char** argv);
int ServeCommand(int argc, char** argv);  // built with cpp-httplib only (STATICLM_SERVE)

}  // namespace staticlm::cli
