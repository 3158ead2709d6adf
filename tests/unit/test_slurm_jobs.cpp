// --use-slurm as a unit (the cluster itself: tests/e2e/test_slurm*.sh): what turnkey reads from
// Slurm's own output (lines as slurm-wlm 22.05 prints them), how it judges a job that ended
// without a record, and the sbatch options every job gets.
#include <gtest/gtest.h>

#include <algorithm>

#include "turnkey/machine/allocation.h"
#include "corpus/slurm/slurm_jobs.h"

namespace turnkey::engine_internal {
namespace {

// `scontrol show job -o` of a job whose node was killed under it (two-node test cluster).
const char* kNodeFailLine =
    "JobId=6 JobName=turnkey-e_slow_1a2b3c4d UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=NODE_FAIL Reason=NodeDown "
    "Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:29 "
    "TimeLimit=00:02:00 TimeMin=N/A SubmitTime=2026-11-24T11:26:00 "
    "EligibleTime=2026-11-24T11:26:00 AccrueTime=2026-11-24T11:26:00 "
    "StartTime=2026-11-24T11:26:00 EndTime=2026-11-24T11:26:29 Deadline=N/A SuspendTime=None "
    "SecsPreSuspend=0 LastSchedEval=2026-11-24T11:26:00 Scheduler=Main Partition=main "
    "AllocNode:Sid=localhost:23588 ReqNodeList=(null) ExcNodeList=(null) NodeList=n1 BatchHost=n1 "
    "NumNodes=1 NumCPUs=2 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=2,node=1,billing=2 "
    "OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null) Command=/c/e_slow.sbatch "
    "WorkDir=/tmp StdErr=/c/e.slurm-6.txt StdIn=/dev/null StdOut=/c/e.slurm-6.txt Power=\n";

TEST(SlurmOutput, ReadsAJobLineOfScontrol) {
  const SlurmJobInfo job = parse_scontrol_job(kNodeFailLine);
  EXPECT_EQ(job.id, "6");
  EXPECT_EQ(job.state, "NODE_FAIL");
  EXPECT_EQ(job.reason, "NodeDown");
  EXPECT_EQ(job.node, "n1");
  EXPECT_EQ(job.exit_code, 0);
  EXPECT_EQ(job.exit_signal, 0);
  EXPECT_EQ(job.start_time, "2026-11-24T11:26:00");
  EXPECT_EQ(job.end_time, "2026-11-24T11:26:29");
  EXPECT_FALSE(job.purged);
  // "(null)" is no value; a key is matched only at a field's start.
  EXPECT_EQ(scontrol_field(kNodeFailLine, "Account"), "");
  EXPECT_EQ(scontrol_field(kNodeFailLine, "Node"), "");
  EXPECT_EQ(scontrol_field(kNodeFailLine, "List"), "");
}

TEST(SlurmOutput, AJobTheControllerForgotIsPurged) {
  const SlurmJobInfo job = parse_scontrol_job("slurm_load_jobs error: Invalid job id specified\n");
  EXPECT_TRUE(job.purged);
  EXPECT_EQ(job.state, "");
}

TEST(SlurmOutput, ReadsExitCodeAndSignal) {
  const SlurmJobInfo job = parse_scontrol_job(
      "JobId=4 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 BatchHost=n2 StartTime=Unknown");
  EXPECT_EQ(job.exit_code, 3);
  EXPECT_EQ(job.start_time, "");
  EXPECT_EQ(parse_scontrol_job("JobId=5 JobState=FAILED ExitCode=0:53").exit_signal, 53);
  EXPECT_EQ(parse_scontrol_job("JobId=5 JobState=PENDING").exit_code, -1);
}

TEST(SlurmOutput, ReadsSqueueStatesSkippingOtherLines) {
  const auto states = parse_squeue_states(
      "squeue: warning: something about the configuration\n2 COMPLETED\n3 RUNNING\n"
      "1 NODE_FAIL\n\nnot a job line\n7 PENDING extra\n");
  EXPECT_EQ(states.size(), 3u);
  EXPECT_EQ(states.at("1"), "NODE_FAIL");
  EXPECT_EQ(states.at("3"), "RUNNING");
  EXPECT_EQ(states.count("7"), 0u);
}

TEST(SlurmOutput, ReadsTheJobIdSbatchPrinted) {
  EXPECT_EQ(parse_sbatch_id("12\n"), "12");
  EXPECT_EQ(parse_sbatch_id("13;cluster2\n"), "13");
  EXPECT_EQ(parse_sbatch_id("sbatch: warning: can't honor --ntasks-per-node\n14\n"), "14");
  EXPECT_EQ(parse_sbatch_id("sbatch: error: Batch job submission failed: Invalid account\n"), "");
  EXPECT_EQ(parse_sbatch_id(""), "");
}

TEST(SlurmJobEnd, OnlyEndedStatesAreTerminal) {
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL",
                        "OUT_OF_MEMORY", "PREEMPTED", "DEADLINE"}) {
    EXPECT_TRUE(is_terminal_job_state(s)) << s;
  }
  // Still holding the node or coming back: its processes may run.
  for (const char* s : {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "REQUEUED",
                        "REQUEUE_HOLD", "SUSPENDED", "", "Unknown"}) {
    EXPECT_FALSE(is_terminal_job_state(s)) << s;
  }
}

TEST(SlurmJobEnd, ANodeThatFailedOrCannotServeIsTheNodesFault) {
  EXPECT_EQ(classify_job_end(parse_scontrol_job(kNodeFailLine)), JobEnd::NodeLost);
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=1 JobState=BOOT_FAIL")), JobEnd::NodeLost);
  // The output file in the cache dir could not be created on the node (slurmstepd: EROFS).
  EXPECT_EQ(classify_job_end(parse_scontrol_job(
                "JobId=13 JobState=FAILED Reason=JobLaunchFailure ExitCode=0:53 BatchHost=n3")),
            JobEnd::NodeUnfit);
  // The job's own script: no cache dir there (3), no turnkey binary there (4).
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=2 JobState=FAILED ExitCode=3:0")),
            JobEnd::NodeUnfit);
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=2 JobState=FAILED ExitCode=4:0")),
            JobEnd::NodeUnfit);
  // The input's own failures are not: turnkey exits 1, a signal is the script's.
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=2 JobState=FAILED ExitCode=1:0")),
            JobEnd::Other);
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=2 JobState=FAILED ExitCode=3:9")),
            JobEnd::Other);
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=2 JobState=COMPLETED ExitCode=0:0")),
            JobEnd::Other);
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=2 JobState=PREEMPTED")), JobEnd::Preempted);
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=2 JobState=CANCELLED")), JobEnd::Cancelled);
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=2 JobState=DEADLINE")), JobEnd::Timeout);
  EXPECT_EQ(classify_job_end(parse_scontrol_job("JobId=2 JobState=OUT_OF_MEMORY")),
            JobEnd::OutOfMemory);
  EXPECT_EQ(describe_job_end(parse_scontrol_job(kNodeFailLine)),
            "Slurm job 6 on node n1 ended NODE_FAIL: the node was lost");
}

// The one table of a job's end: every end state in one row, every way of ending with a row, and
// what an input gets from a job that left no record: a lost or unfit node and a preemption run
// again elsewhere (an unfit node gets no more jobs); the others are the input's end, each with
// its status; only the time limit's SIGTERM outweighs the job's own "cancelled" record.
TEST(SlurmJobEnd, OneRowPerWayAJobEndsWithTheInputsStatus) {
  std::vector<std::string> seen;
  for (const JobEndRow& row : job_end_table()) {
    EXPECT_EQ(&job_end_row(row.end), &row);
    for (const char* s : row.states) {
      EXPECT_EQ(std::count(seen.begin(), seen.end(), s), 0) << s << " is in two rows";
      seen.push_back(s);
      EXPECT_TRUE(is_terminal_job_state(s)) << s;
    }
  }
  EXPECT_EQ(seen.size(), 11u);
  for (JobEnd end : {JobEnd::NodeLost, JobEnd::NodeUnfit, JobEnd::Preempted, JobEnd::Cancelled,
                     JobEnd::Timeout, JobEnd::OutOfMemory, JobEnd::Other}) {
    EXPECT_EQ(job_end_row(end).end, end);
  }
  const auto row_of = [](const char* line) {
    return job_end_row(classify_job_end(parse_scontrol_job(line)));
  };
  EXPECT_TRUE(row_of(kNodeFailLine).run_again);
  EXPECT_EQ(row_of(kNodeFailLine).status, Status::NodeFailed);
  EXPECT_TRUE(row_of("JobId=2 JobState=FAILED ExitCode=4:0").run_again);
  EXPECT_EQ(row_of("JobId=2 JobState=FAILED ExitCode=4:0").status, Status::NodeFailed);
  EXPECT_TRUE(row_of("JobId=2 JobState=PREEMPTED").run_again);
  EXPECT_EQ(row_of("JobId=2 JobState=PREEMPTED").status, Status::Cancelled);
  EXPECT_FALSE(row_of("JobId=2 JobState=CANCELLED").run_again);
  EXPECT_EQ(row_of("JobId=2 JobState=CANCELLED").status, Status::Cancelled);
  EXPECT_EQ(row_of("JobId=2 JobState=TIMEOUT").status, Status::Timeout);
  EXPECT_STREQ(row_of("JobId=2 JobState=TIMEOUT").detail, "Slurm job {job} reached its time limit");
  EXPECT_TRUE(row_of("JobId=2 JobState=TIMEOUT").time_limit);
  EXPECT_TRUE(row_of("JobId=2 JobState=DEADLINE").time_limit);
  EXPECT_FALSE(row_of("JobId=2 JobState=CANCELLED").time_limit);
  EXPECT_TRUE(row_of("JobId=2 JobState=FAILED ExitCode=3:0").exclude_node);
  EXPECT_FALSE(row_of(kNodeFailLine).exclude_node);
  EXPECT_EQ(row_of("JobId=2 JobState=OUT_OF_MEMORY").status, Status::OutOfMemory);
  EXPECT_FALSE(row_of("JobId=2 JobState=FAILED ExitCode=1:0").run_again);
  EXPECT_EQ(row_of("JobId=2 JobState=FAILED ExitCode=1:0").status, Status::Crashed);
  EXPECT_EQ(row_of("JobId=2 JobState=COMPLETED ExitCode=0:0").status, Status::Crashed);
}

TEST(SlurmJobShape, BenchmarkJobsHoldTheirNodeAndSlurmNeverRequeuesOnItsOwn) {
  SlurmJobShape shape;
  shape.exclusive = true;
  shape.time_minutes = 3;
  shape.partition = "cpu";
  shape.account = "proj1";
  shape.constraint = "epyc9b45";
  shape.memory = "4352M";
  const auto o =
      sbatch_options(shape, "turnkey-a_12345678", "/c/inputs/a.slurm-%j.txt", {"n1", "n4"});
  auto after = [&](const std::string& flag) {
    auto it = std::find(o.begin(), o.end(), flag);
    return it == o.end() || it + 1 == o.end() ? std::string("<absent>") : *(it + 1);
  };
  auto has = [&](const std::string& flag) {
    return std::find(o.begin(), o.end(), flag) != o.end();
  };
  EXPECT_TRUE(has("--exclusive"));
  EXPECT_TRUE(has("--no-requeue"));
  EXPECT_TRUE(has("--parsable"));
  EXPECT_EQ(after("--nodes"), "1");
  EXPECT_EQ(after("--time"), "3");
  EXPECT_EQ(after("--partition"), "cpu");
  EXPECT_EQ(after("--account"), "proj1");
  EXPECT_EQ(after("--constraint"), "epyc9b45");
  EXPECT_EQ(after("--mem"), "4352M");
  EXPECT_EQ(after("--exclude"), "n1,n4");
  EXPECT_EQ(after("--job-name"), "turnkey-a_12345678");
  EXPECT_EQ(after("--output"), "/c/inputs/a.slurm-%j.txt");

  const auto plain = sbatch_options(SlurmJobShape{}, "turnkey-b", "/c/b.txt", {});
  for (const char* flag :
       {"--exclusive", "--partition", "--account", "--constraint", "--mem", "--exclude"}) {
    EXPECT_EQ(std::find(plain.begin(), plain.end(), flag), plain.end()) << flag;
  }
}

TEST(Allocation, CpuListsAreWrittenAsRanges) {
  EXPECT_EQ(cpu_list_text({}), "");
  EXPECT_EQ(cpu_list_text({3}), "3");
  EXPECT_EQ(cpu_list_text({0, 1}), "0-1");
  EXPECT_EQ(cpu_list_text({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
}

}  // namespace
}  // namespace turnkey::engine_internal
